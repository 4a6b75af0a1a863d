import Foundation

/// The scanner's structure (members, elements, skipping values) and number reading.
extension FastJSONScanner {
    // MARK: Structure

    /// After `{`: skips space; true if a key or `}` follows.
    @inline(__always) mutating func firstMember() -> Bool {
        skipSpace()
        let c = byte
        return c == UInt8(ascii: "\"") || c == UInt8(ascii: "}")
    }

    /// At a member (after `{` or `,` and space): reads `"key" :` and the space after; returns the key's bytes.
    @inline(__always) mutating func memberKey() -> (UnsafePointer<UInt8>, Int)? {
        skipSpace()
        guard byte == UInt8(ascii: "\""), let key = string() else { return nil }
        skipSpace()
        guard byte == UInt8(ascii: ":") else { return nil }
        p += 1
        skipSpace()
        return key
    }

    /// After an element: `,` (false) or the closing bracket (true); nil on anything else.
    @inline(__always) mutating func endOfElement(close: UInt8) -> Bool? {
        skipSpace()
        let c = byte
        if c == UInt8(ascii: ",") { p += 1; return false }
        if c == close { p += 1; return true }
        return nil
    }

    /// Skips (and checks) one value at the cursor.
    mutating func skipValue(depth: Int) -> Bool {
        switch byte {
        case UInt8(ascii: "\""):
            return string() != nil
        case UInt8(ascii: "{"):
            guard depth < Self.maxDepth else { return false }
            p += 1
            guard firstMember() else { return false }
            if byte == UInt8(ascii: "}") { p += 1; return true }
            while true {
                guard memberKey() != nil, skipValue(depth: depth + 1), let last = endOfElement(close: UInt8(ascii: "}")) else { return false }
                if last { return true }
            }
        case UInt8(ascii: "["):
            guard depth < Self.maxDepth else { return false }
            p += 1
            skipSpace()
            if byte == UInt8(ascii: "]") { p += 1; return true }
            while true {
                skipSpace()
                guard skipValue(depth: depth + 1), let last = endOfElement(close: UInt8(ascii: "]")) else { return false }
                if last { return true }
            }
        case UInt8(ascii: "t"):
            return literal("true")
        case UInt8(ascii: "f"):
            return literal("false")
        case UInt8(ascii: "n"):
            return literal("null")
        default:
            return numberSpan() != nil
        }
    }

    mutating func literal(_ word: StaticString) -> Bool {
        let n = word.utf8CodeUnitCount
        guard end - p >= n, memcmp(p, word.utf8Start, n) == 0 else { return false }
        p += n
        return true
    }

    /// A string at `"` with only printable ASCII and no escapes; returns its content.
    @inline(__always) mutating func string() -> (UnsafePointer<UInt8>, Int)? {
        p += 1
        let start = p
        // Eight bytes at a time up to the first byte that ends the plain run: a quote, a backslash, a
        // control byte or a non-ASCII byte (the lowest flagged byte of these masks is always a real one).
        while end - p >= 8 {
            let w = UnsafeRawPointer(p).loadUnaligned(as: UInt64.self)
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            let q = w ^ (ones &* 0x22), b = w ^ (ones &* 0x5C)
            let stop = ((q &- ones) & ~q) | ((b &- ones) & ~b) | ((w &- ones &* 0x20) & ~w) | w
            let flagged = stop & highs
            if flagged != 0 {
                p += flagged.trailingZeroBitCount >> 3
                break
            }
            p += 8
        }
        while p < end {
            let c = p.pointee
            // One compare for "below 0x20 or from 0x80 on" (wrapping), then the quote and the backslash.
            if c &- 0x20 >= 0x60 || c == UInt8(ascii: "\\") { return nil }
            if c == UInt8(ascii: "\"") {
                let count = p - start
                p += 1
                return (start, count)
            }
            p += 1
        }
        return nil
    }

    @inline(__always) static func keyIs(_ key: UnsafePointer<UInt8>, _ n: Int, _ name: StaticString) -> Bool {
        guard n == name.utf8CodeUnitCount else { return false }
        let w = name.utf8Start
        for k in 0..<n where key[k] != w[k] { return false }
        return true
    }

    // MARK: Numbers

    /// A strict JSON number without exponent, at most 17 characters (so `JSONSerialization` reads it as
    /// an exact `Int64`/`UInt64` or as `Double(text)`). Returns its start and whether it has a fraction.
    mutating func numberSpan() -> (UnsafePointer<UInt8>, Bool)? {
        let start = p
        if byte == UInt8(ascii: "-") { p += 1 }
        let first = byte
        guard Self.isDigit(first) else { return nil }
        p += 1
        if first != UInt8(ascii: "0") {
            while Self.isDigit(byte) { p += 1 }
        }
        var fraction = false
        if byte == UInt8(ascii: ".") {
            p += 1
            guard Self.isDigit(byte) else { return nil }
            while Self.isDigit(byte) { p += 1 }
            fraction = true
        }
        let c = byte
        if c == UInt8(ascii: "e") || c == UInt8(ascii: "E") { return nil }
        guard p - start <= 17 else { return nil }
        return (start, fraction)
    }

    enum Number { case notNumber, integer(Int), decimal(Double), unsure }

    /// The value at the cursor as `NSNumber` would give it, consuming it if it is a number: `.notNumber`
    /// for a string, object, array or null (not consumed); `.unsure` for booleans or malformed numbers.
    mutating func numberValue() -> Number {
        let c = byte
        guard c == UInt8(ascii: "-") || Self.isDigit(c) else {
            return c == UInt8(ascii: "t") || c == UInt8(ascii: "f") ? .unsure : .notNumber
        }
        guard let (start, fraction) = numberSpan() else { return .unsure }
        var q = start
        var negative = false
        if q.pointee == UInt8(ascii: "-") { negative = true; q += 1 }
        var mantissa: Int64 = 0
        var scale = 0
        while q < p {
            let d = q.pointee
            if d == UInt8(ascii: ".") {
                scale = p - q - 1
            } else {
                mantissa = mantissa &* 10 &+ Int64(d &- 48)  // at most 17 digits: no overflow
            }
            q += 1
        }
        if !fraction { return .integer(Int(negative ? -mantissa : mantissa)) }
        // Exact fast path (Clinger): mantissa below 2^53 and a power of ten that is exact in a Double.
        if mantissa < (1 << 53) && scale <= 22 {
            let value = Double(mantissa) / Self.powerOfTen(scale)
            return .decimal(negative ? -value : value)
        }
        let parsed = Double(String(decoding: UnsafeBufferPointer(start: start, count: p - start), as: UTF8.self))
        return parsed.map { .decimal($0) } ?? .unsure
    }

    /// 10^k for k in 0...22, each exact in a Double.
    @inline(__always) static func powerOfTen(_ k: Int) -> Double {
        var value = 1.0
        var base = 10.0
        var e = k
        while e > 0 {  // exact: every intermediate power of ten up to 1e22 is a Double
            if e & 1 == 1 { value *= base }
            base *= base
            e >>= 1
        }
        return value
    }

    @inline(__always) static func isDigit(_ c: UInt8) -> Bool { c &- 48 < 10 }

    @inline(__always) mutating func skipSpace() {
        while p < end {
            let c = p.pointee
            guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
            p += 1
        }
    }
}
