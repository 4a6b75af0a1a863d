/// The one JSON lexer of the package: strict RFC 8259 tokens (whitespace, literals, strings with
/// every escape and surrogate pairs, numbers) over UTF-8 bytes, with error positions. `JSONReader`
/// builds trees on it; the RPC layer's `JSONValue` and the model manifest's order-keeping value
/// are two builders.
public struct JSONLexer {
    public let bytes: UnsafeBufferPointer<UInt8>
    public var index = 0

    public init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The byte at the current position; nil at the end.
    @inline(__always)
    public var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    public var isAtEnd: Bool { index >= bytes.count }

    public func error(_ message: String) -> JSONParseError { JSONParseError(message: message, offset: index) }

    public mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    public mutating func expectLiteral(_ literal: StaticString) throws {
        let n = literal.utf8CodeUnitCount
        guard index + n <= bytes.count else { throw error("unexpected end of JSON") }
        let p = literal.utf8Start
        for i in 0..<n where bytes[index + i] != p[i] { throw error("invalid literal") }
        index += n
    }

    /// The string starting at the current `"`, unescaped.
    public mutating func string() throws -> String {
        index += 1
        let start = index
        // Fast path: no escapes (a base64 image is most of a request body).
        skipPlainBytes()
        if index < bytes.count {
            let c = bytes[index]
            if c == UInt8(ascii: "\"") {
                let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return s
            }
            if c < 0x20 { throw error("control character in string") }
        }
        var out = Array(bytes[start..<index])
        while index < bytes.count {
            let c = bytes[index]
            if c == UInt8(ascii: "\"") {
                index += 1
                return String(decoding: out, as: UTF8.self)
            }
            if c < 0x20 { throw error("control character in string") }
            if c != UInt8(ascii: "\\") {
                out.append(c)
                index += 1
                continue
            }
            index += 1
            guard index < bytes.count else { break }
            try escape(into: &out)
        }
        throw error("unterminated string")
    }

    /// The bytes of the string starting at the current `"` when it has no escape, the index then
    /// past its closing quote; nil (and the index somewhere inside) when it has an escape, a control
    /// character or no end. For callers that read a known shape and hand anything else to the full
    /// parser: no `String` is made.
    public mutating func plainString() -> Range<Int>? {
        index += 1
        let start = index
        skipPlainBytes()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        return start..<(index - 1)
    }

    /// Moves past bytes that are neither a quote, a backslash nor a control character: whole words of
    /// 8 bytes at once while none is one, then byte by byte.
    @inline(__always)
    mutating func skipPlainBytes() {
        if let base = bytes.baseAddress {
            while index + 8 <= bytes.count,
                  !Self.hasSpecialByte(UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)) {
                index += 8
            }
        }
        while index < bytes.count {
            let c = bytes[index]
            if c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") || c < 0x20 { return }
            index += 1
        }
    }

    /// Whether the bytes in `range` are exactly `text`.
    public func bytes(_ range: Range<Int>, equal text: StaticString) -> Bool {
        guard range.count == text.utf8CodeUnitCount else { return false }
        let p = text.utf8Start
        for i in 0..<range.count where bytes[range.lowerBound + i] != p[i] { return false }
        return true
    }

    /// Whether any byte of `w` is `"`, `\\` or below 0x20, by word arithmetic: a byte of `v` is zero
    /// exactly when `(v - 0x01…01) & ~v & 0x80…80` is nonzero, and below 0x20 exactly when
    /// `(w - 0x20…20) & ~w & 0x80…80` is (no false positives for either question).
    @inline(__always)
    static func hasSpecialByte(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func hasZero(_ v: UInt64) -> Bool { (v &- ones) & ~v & highs != 0 }
        return hasZero(w ^ (ones &* 0x22)) || hasZero(w ^ (ones &* 0x5C)) || (w &- ones &* 0x20) & ~w & highs != 0
    }

    /// One escape after its backslash, appended to `out` as UTF-8.
    mutating func escape(into out: inout [UInt8]) throws {
        let e = bytes[index]
        index += 1
        switch e {
        case UInt8(ascii: "\""): out.append(0x22)
        case UInt8(ascii: "\\"): out.append(0x5C)
        case UInt8(ascii: "/"): out.append(0x2F)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw error("unpaired UTF-16 surrogate in string")
                }
                index += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw error("invalid UTF-16 surrogate pair") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw error("unpaired UTF-16 surrogate in string")
            }
            guard let u = Unicode.Scalar(scalar) else { throw error("invalid unicode escape") }
            out.append(contentsOf: Array(String(Character(u)).utf8))
        default:
            throw error("invalid escape '\\\(Character(Unicode.Scalar(e)))' in string")
        }
    }

    mutating func hex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("truncated unicode escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in unicode escape")
            }
            v = v << 4 | d
            index += 1
        }
        return v
    }

    /// The number starting at the current position: its exact text, and whether it has neither a
    /// fraction nor an exponent.
    public mutating func number() throws -> (text: String, isInteger: Bool) {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            skipDigits()
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number: digit expected after '.'") }
            skipDigits()
        }
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            isInteger = false
            index += 1
            if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number: digit expected in exponent") }
            skipDigits()
        }
        return (String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self), isInteger)
    }

    @inline(__always)
    mutating func skipDigits() {
        while index < bytes.count && isDigit(bytes[index]) { index += 1 }
    }

    @inline(__always)
    func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
}
