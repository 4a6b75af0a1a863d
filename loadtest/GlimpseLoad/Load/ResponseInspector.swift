import Foundation

/// What one HTTP response says: per image classified, the variant served and server timings; per failed call, the error.
public struct ResponseOutcome: Equatable, Sendable {
    public struct CallResult: Equatable, Sendable {
        public var variant: String?
        public var queueMs: Double?
        public var inferenceMs: Double?
        public var batchSize: Int?
        /// The label of the first (top-1) prediction.
        public var label: String?
    }
    public struct CallError: Equatable, Sendable {
        public var code: Int
        public var reason: String?
        public var label: String { reason.map { "\(code) \($0)" } ?? String(code) }
    }

    public var status: Int
    public var results: [CallResult] = []
    public var errors: [CallError] = []

    /// Success: a 2xx status and no JSON-RPC error in the body.
    public var isSuccess: Bool { (200..<300).contains(status) && errors.isEmpty }
}

/// Parses responses of `/rpc` (object or batch array); other bodies are judged by status alone.
///
/// The usual body is read by a single-pass byte scanner that looks only at the members that matter
/// (`error.code`, `error.data.reason`, `result[...].variant`, `timing_ms.queue/inference`, `batch_size`).
/// It accepts only plain, strict JSON (ASCII strings without escapes, short numbers without exponent,
/// no duplicate members where it looks); any other body goes through `JSONSerialization` exactly as
/// before, so the outcome of every body is the same as `JSONSerialization` would give.
public enum ResponseInspector {
    public static func inspect(status: Int, body: [UInt8]) -> ResponseOutcome {
        var outcome = ResponseOutcome(status: status)
        inspect(status: status, body: body, into: &outcome)
        return outcome
    }

    /// Fills `outcome` (its arrays are emptied first and their storage reused), so a recorder can inspect
    /// every response without allocating. Returns whether the byte scanner read the body (or it is not
    /// JSON), as opposed to the `JSONSerialization` fallback.
    @discardableResult
    static func inspect(status: Int, body: [UInt8], into outcome: inout ResponseOutcome) -> Bool {
        outcome.status = status
        if !outcome.results.isEmpty { outcome.results.removeAll(keepingCapacity: true) }
        if !outcome.errors.isEmpty { outcome.errors.removeAll(keepingCapacity: true) }
        let fast: Bool = body.withUnsafeBufferPointer { bytes in
            guard let first = bytes.first(where: { $0 > 32 }), first == UInt8(ascii: "{") || first == UInt8(ascii: "[") else {
                return true  // not JSON: judged by status alone
            }
            var scanner = FastJSONScanner(bytes)
            if scanner.scanDocument(into: &outcome) { return true }
            outcome.results.removeAll(keepingCapacity: true)
            outcome.errors.removeAll(keepingCapacity: true)
            return false
        }
        if !fast { inspectWithFoundation(body: body, into: &outcome) }
        return fast
    }

    /// The reference reading (any JSON `JSONSerialization` accepts).
    static func inspectWithFoundation(body: [UInt8], into outcome: inout ResponseOutcome) {
        guard let first = body.first(where: { $0 > 32 }), first == UInt8(ascii: "{") || first == UInt8(ascii: "[") else {
            return
        }
        guard let json = try? JSONSerialization.jsonObject(with: Data(body)) else { return }
        let items: [Any] = (json as? [Any]) ?? [json]
        for item in items {
            guard let object = item as? [String: Any] else { continue }
            if let error = object["error"] as? [String: Any] {
                let code = (error["code"] as? NSNumber)?.intValue ?? 0
                let reason = (error["data"] as? [String: Any])?["reason"] as? String
                outcome.errors.append(.init(code: code, reason: reason))
            } else if let result = object["result"] {
                // One image: an object; several ("images": [...]): an array with one object per image.
                let perImage = (result as? [Any]) ?? ((result as? [String: Any])?["results"] as? [Any]) ?? [result]
                for case let item as [String: Any] in perImage {
                    let timing = item["timing_ms"] as? [String: Any]
                    let top = (item["predictions"] as? [Any])?.first as? [String: Any]
                    outcome.results.append(.init(variant: item["variant"] as? String,
                                                 queueMs: (timing?["queue"] as? NSNumber)?.doubleValue,
                                                 inferenceMs: (timing?["inference"] as? NSNumber)?.doubleValue,
                                                 batchSize: (item["batch_size"] as? NSNumber)?.intValue,
                                                 label: top?["label"] as? String))
                }
            }
        }
    }
}

/// A strict, allocation-free, single-pass JSON scanner for response bodies. Every method returns false
/// ("not sure") on anything outside the plain subset it handles; the caller then falls back to
/// `JSONSerialization`. It fills `outcome` as it goes; on false the caller discards what it added.
struct FastJSONScanner {
    private var p: UnsafePointer<UInt8>
    private let end: UnsafePointer<UInt8>
    private static let maxDepth = 64

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        if let base = bytes.baseAddress {
            p = base
            end = base + bytes.count
        } else {
            let empty = UnsafePointer<UInt8>(bitPattern: 1)!  // never read: p == end
            p = empty
            end = empty
        }
    }

    /// The byte at the cursor, or 0 at the end (0 is never valid where a byte is looked at).
    @inline(__always) private var byte: UInt8 { p < end ? p.pointee : 0 }

    // MARK: Document

    /// Scans the whole body (object or batch array) and fills `outcome`; false: use the fallback.
    mutating func scanDocument(into outcome: inout ResponseOutcome) -> Bool {
        skipSpace()
        switch byte {
        case UInt8(ascii: "{"):
            guard call(into: &outcome, depth: 1) else { return false }
        case UInt8(ascii: "["):
            p += 1
            skipSpace()
            if byte == UInt8(ascii: "]") {
                p += 1
            } else {
                while true {
                    skipSpace()
                    if byte == UInt8(ascii: "{") {
                        guard call(into: &outcome, depth: 2) else { return false }
                    } else {
                        guard skipValue(depth: 1) else { return false }
                    }
                    guard let last = endOfElement(close: UInt8(ascii: "]")) else { return false }
                    if last { break }
                }
            }
        default:
            return false
        }
        skipSpace()
        return p == end
    }

    /// One JSON-RPC response object (at `{`): an `error` object wins over `result`, wherever they stand.
    private mutating func call(into outcome: inout ResponseOutcome, depth: Int) -> Bool {
        guard depth <= Self.maxDepth else { return false }
        let mark = outcome.results.count
        var seen: UInt8 = 0
        var error: ResponseOutcome.CallError?
        p += 1
        guard firstMember() else { return false }
        if byte != UInt8(ascii: "}") {
            while true {
                guard let (key, n) = memberKey() else { return false }
                if Self.keyIs(key, n, "error") {
                    guard seen & 1 == 0 else { return false }
                    seen |= 1
                    if byte == UInt8(ascii: "{") {
                        var code = 0
                        var reason: String?
                        guard callError(code: &code, reason: &reason, depth: depth + 1) else { return false }
                        error = .init(code: code, reason: reason)
                    } else {
                        guard skipValue(depth: depth) else { return false }
                    }
                } else if Self.keyIs(key, n, "result") {
                    guard seen & 2 == 0 else { return false }
                    seen |= 2
                    switch byte {
                    case UInt8(ascii: "["):
                        guard images(into: &outcome, depth: depth + 1) else { return false }
                    case UInt8(ascii: "{"):
                        guard image(into: &outcome, depth: depth + 1, lookForResults: true) else { return false }
                    default:
                        guard skipValue(depth: depth) else { return false }  // a scalar result: no per-image entries
                    }
                } else {
                    guard skipValue(depth: depth) else { return false }
                }
                guard let last = endOfElement(close: UInt8(ascii: "}")) else { return false }
                if last { break }
            }
        } else {
            p += 1
        }
        if let error {
            outcome.results.removeSubrange(mark...)
            outcome.errors.append(error)
        }
        return true
    }

    /// `"error": {"code": ..., "data": {"reason": ...}}` (at `{`).
    private mutating func callError(code: inout Int, reason: inout String?, depth: Int) -> Bool {
        guard depth <= Self.maxDepth else { return false }
        var seen: UInt8 = 0
        p += 1
        guard firstMember() else { return false }
        if byte == UInt8(ascii: "}") { p += 1; return true }
        while true {
            guard let (key, n) = memberKey() else { return false }
            if Self.keyIs(key, n, "code") {
                guard seen & 1 == 0 else { return false }
                seen |= 1
                switch numberValue() {
                case .integer(let v): code = v
                case .notNumber: guard skipValue(depth: depth) else { return false }
                case .decimal, .unsure: return false
                }
            } else if Self.keyIs(key, n, "data") {
                guard seen & 2 == 0 else { return false }
                seen |= 2
                if byte == UInt8(ascii: "{") {
                    guard errorData(reason: &reason, depth: depth + 1) else { return false }
                } else {
                    guard skipValue(depth: depth) else { return false }
                }
            } else {
                guard skipValue(depth: depth) else { return false }
            }
            guard let last = endOfElement(close: UInt8(ascii: "}")) else { return false }
            if last { return true }
        }
    }

    /// `"data": {"reason": "..."}` (at `{`).
    private mutating func errorData(reason: inout String?, depth: Int) -> Bool {
        guard depth <= Self.maxDepth else { return false }
        var seen = false
        p += 1
        guard firstMember() else { return false }
        if byte == UInt8(ascii: "}") { p += 1; return true }
        while true {
            guard let (key, n) = memberKey() else { return false }
            if Self.keyIs(key, n, "reason") {
                guard !seen else { return false }
                seen = true
                if byte == UInt8(ascii: "\"") {
                    guard let (start, count) = string() else { return false }
                    reason = String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
                } else {
                    guard skipValue(depth: depth) else { return false }
                }
            } else {
                guard skipValue(depth: depth) else { return false }
            }
            guard let last = endOfElement(close: UInt8(ascii: "}")) else { return false }
            if last { return true }
        }
    }

    /// An array of per-image results (at `[`); only its objects count.
    private mutating func images(into outcome: inout ResponseOutcome, depth: Int) -> Bool {
        guard depth <= Self.maxDepth else { return false }
        p += 1
        skipSpace()
        if byte == UInt8(ascii: "]") { p += 1; return true }
        while true {
            skipSpace()
            if byte == UInt8(ascii: "{") {
                guard image(into: &outcome, depth: depth + 1, lookForResults: false) else { return false }
            } else {
                guard skipValue(depth: depth) else { return false }
            }
            guard let last = endOfElement(close: UInt8(ascii: "]")) else { return false }
            if last { return true }
        }
    }

    /// One per-image result object (at `{`). With `lookForResults` (a call's `result` object), an array
    /// under `results` holds the per-image entries instead of the object itself.
    private mutating func image(into outcome: inout ResponseOutcome, depth: Int, lookForResults: Bool) -> Bool {
        guard depth <= Self.maxDepth else { return false }
        var entry = ResponseOutcome.CallResult()
        var seen: UInt8 = 0
        var perImage: (at: Int, count: Int)?
        p += 1
        guard firstMember() else { return false }
        if byte != UInt8(ascii: "}") {
            while true {
                guard let (key, n) = memberKey() else { return false }
                if Self.keyIs(key, n, "variant") {
                    guard seen & 1 == 0 else { return false }
                    seen |= 1
                    if byte == UInt8(ascii: "\"") {
                        guard let (start, count) = string() else { return false }
                        entry.variant = String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
                    } else {
                        guard skipValue(depth: depth) else { return false }
                    }
                } else if Self.keyIs(key, n, "timing_ms") {
                    guard seen & 2 == 0 else { return false }
                    seen |= 2
                    if byte == UInt8(ascii: "{") {
                        guard timing(queue: &entry.queueMs, inference: &entry.inferenceMs, depth: depth + 1) else { return false }
                    } else {
                        guard skipValue(depth: depth) else { return false }
                    }
                } else if Self.keyIs(key, n, "batch_size") {
                    guard seen & 4 == 0 else { return false }
                    seen |= 4
                    switch numberValue() {
                    case .integer(let v): entry.batchSize = v
                    case .notNumber: guard skipValue(depth: depth) else { return false }
                    case .decimal, .unsure: return false
                    }
                } else if Self.keyIs(key, n, "predictions") {
                    guard seen & 16 == 0 else { return false }
                    seen |= 16
                    if byte == UInt8(ascii: "[") {
                        guard topLabel(&entry.label, depth: depth + 1) else { return false }
                    } else {
                        guard skipValue(depth: depth) else { return false }
                    }
                } else if lookForResults && Self.keyIs(key, n, "results") {
                    guard seen & 8 == 0 else { return false }
                    seen |= 8
                    if byte == UInt8(ascii: "[") {
                        let at = outcome.results.count
                        guard images(into: &outcome, depth: depth + 1) else { return false }
                        perImage = (at, outcome.results.count - at)
                    } else {
                        guard skipValue(depth: depth) else { return false }
                    }
                } else {
                    guard skipValue(depth: depth) else { return false }
                }
                guard let last = endOfElement(close: UInt8(ascii: "}")) else { return false }
                if last { break }
            }
        } else {
            p += 1
        }
        if perImage == nil { outcome.results.append(entry) }
        return true
    }

    /// `"predictions": [{"label": ...}, ...]` (at `[`): the first prediction's label; the rest is skipped.
    private mutating func topLabel(_ label: inout String?, depth: Int) -> Bool {
        guard depth <= Self.maxDepth else { return false }
        p += 1
        skipSpace()
        if byte == UInt8(ascii: "]") { p += 1; return true }
        var first = true
        while true {
            skipSpace()
            if first && byte == UInt8(ascii: "{") {
                var seen = false
                p += 1
                guard firstMember() else { return false }
                if byte == UInt8(ascii: "}") {
                    p += 1
                } else {
                    while true {
                        guard let (key, n) = memberKey() else { return false }
                        if Self.keyIs(key, n, "label") {
                            guard !seen else { return false }
                            seen = true
                            if byte == UInt8(ascii: "\"") {
                                guard let (start, count) = string() else { return false }
                                label = String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
                            } else {
                                guard skipValue(depth: depth + 1) else { return false }
                            }
                        } else {
                            guard skipValue(depth: depth + 1) else { return false }
                        }
                        guard let last = endOfElement(close: UInt8(ascii: "}")) else { return false }
                        if last { break }
                    }
                }
            } else {
                guard skipValue(depth: depth) else { return false }
            }
            first = false
            guard let last = endOfElement(close: UInt8(ascii: "]")) else { return false }
            if last { return true }
        }
    }

    /// `"timing_ms": {"queue": ..., "inference": ...}` (at `{`).
    private mutating func timing(queue: inout Double?, inference: inout Double?, depth: Int) -> Bool {
        guard depth <= Self.maxDepth else { return false }
        var seen: UInt8 = 0
        p += 1
        guard firstMember() else { return false }
        if byte == UInt8(ascii: "}") { p += 1; return true }
        while true {
            guard let (key, n) = memberKey() else { return false }
            let bit: UInt8 = Self.keyIs(key, n, "queue") ? 1 : (Self.keyIs(key, n, "inference") ? 2 : 0)
            if bit != 0 {
                guard seen & bit == 0 else { return false }
                seen |= bit
                let value: Double?
                switch numberValue() {
                case .integer(let v): value = Double(v)
                case .decimal(let d): value = d
                case .notNumber:
                    guard skipValue(depth: depth) else { return false }
                    value = nil
                case .unsure: return false
                }
                if bit == 1 { queue = value } else { inference = value }
            } else {
                guard skipValue(depth: depth) else { return false }
            }
            guard let last = endOfElement(close: UInt8(ascii: "}")) else { return false }
            if last { return true }
        }
    }

    // MARK: Structure

    /// After `{`: skips space; true if a key or `}` follows.
    @inline(__always) private mutating func firstMember() -> Bool {
        skipSpace()
        let c = byte
        return c == UInt8(ascii: "\"") || c == UInt8(ascii: "}")
    }

    /// At a member (after `{` or `,` and space): reads `"key" :` and the space after; returns the key's bytes.
    @inline(__always) private mutating func memberKey() -> (UnsafePointer<UInt8>, Int)? {
        skipSpace()
        guard byte == UInt8(ascii: "\""), let key = string() else { return nil }
        skipSpace()
        guard byte == UInt8(ascii: ":") else { return nil }
        p += 1
        skipSpace()
        return key
    }

    /// After an element: `,` (false) or the closing bracket (true); nil on anything else.
    @inline(__always) private mutating func endOfElement(close: UInt8) -> Bool? {
        skipSpace()
        let c = byte
        if c == UInt8(ascii: ",") { p += 1; return false }
        if c == close { p += 1; return true }
        return nil
    }

    /// Skips (and checks) one value at the cursor.
    private mutating func skipValue(depth: Int) -> Bool {
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

    private mutating func literal(_ word: StaticString) -> Bool {
        let n = word.utf8CodeUnitCount
        guard end - p >= n, memcmp(p, word.utf8Start, n) == 0 else { return false }
        p += n
        return true
    }

    /// A string at `"` with only printable ASCII and no escapes; returns its content.
    @inline(__always) private mutating func string() -> (UnsafePointer<UInt8>, Int)? {
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

    @inline(__always) private static func keyIs(_ key: UnsafePointer<UInt8>, _ n: Int, _ name: StaticString) -> Bool {
        guard n == name.utf8CodeUnitCount else { return false }
        let w = name.utf8Start
        for k in 0..<n where key[k] != w[k] { return false }
        return true
    }

    // MARK: Numbers

    /// A strict JSON number without exponent, at most 17 characters (so `JSONSerialization` reads it as
    /// an exact `Int64`/`UInt64` or as `Double(text)`). Returns its start and whether it has a fraction.
    private mutating func numberSpan() -> (UnsafePointer<UInt8>, Bool)? {
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
    private mutating func numberValue() -> Number {
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
    @inline(__always) private static func powerOfTen(_ k: Int) -> Double {
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

    @inline(__always) private static func isDigit(_ c: UInt8) -> Bool { c &- 48 < 10 }

    @inline(__always) private mutating func skipSpace() {
        while p < end {
            let c = p.pointee
            guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
            p += 1
        }
    }
}

/// The last plain body whose outcome depends on nothing but its shape (no errors, no numeric fields read),
/// e.g. `health` answers that differ only in `uptime_s`. A body equal to it except for the values of
/// numbers outside strings (each still a plain JSON number) has the same outcome, which a word-by-word
/// comparison finds in a fraction of a full scan.
struct ResponseShape {
    private var bytes: [UInt8] = []
    /// Per byte of `bytes`: 2 in a number outside strings, 1 in a string (quotes included), 0 otherwise.
    private var classes: [UInt8] = []
    private(set) var outcome = ResponseOutcome(status: 0)
    private(set) var isSet = false

    static let maxBytes = 2048

    /// Remembers `body` (read by the byte scanner into `outcome`) if its outcome depends on its shape only.
    mutating func remember(_ body: [UInt8], outcome: ResponseOutcome) {
        isSet = false
        guard body.count <= Self.maxBytes, outcome.errors.isEmpty,
              outcome.results.allSatisfy({ $0.queueMs == nil && $0.inferenceMs == nil && $0.batchSize == nil }) else { return }
        bytes = body
        classes.removeAll(keepingCapacity: true)
        var inString = false
        for c in body {
            if c == UInt8(ascii: "\\") { return }  // never in a body the scanner read; be safe
            if c == UInt8(ascii: "\"") {
                inString.toggle()
                classes.append(1)
            } else if inString {
                classes.append(1)
            } else {
                classes.append(Self.isNumberByte(c) ? 2 : 0)
            }
        }
        guard !inString else { return }
        self.outcome = outcome
        isSet = true
    }

    /// Whether `body` has the remembered shape.
    func matches(_ body: [UInt8]) -> Bool {
        guard isSet else { return false }
        return body.withUnsafeBufferPointer { new in
            bytes.withUnsafeBufferPointer { old in
                classes.withUnsafeBufferPointer { cls in Self.matches(new, old, cls) }
            }
        }
    }

    private static func matches(_ new: UnsafeBufferPointer<UInt8>, _ old: UnsafeBufferPointer<UInt8>, _ cls: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let a = new.baseAddress, let b = old.baseAddress else { return false }
        let n = new.count, m = old.count
        var i = 0, j = 0
        while true {
            // Equal stretches a word at a time, then byte by byte.
            while i + 8 <= n && j + 8 <= m {
                let x = UnsafeRawPointer(a + i).loadUnaligned(as: UInt64.self)
                let y = UnsafeRawPointer(b + j).loadUnaligned(as: UInt64.self)
                if x != y {
                    let d = (x ^ y).trailingZeroBitCount >> 3
                    i += d
                    j += d
                    break
                }
                i += 8
                j += 8
            }
            while i < n && j < m && a[i] == b[j] {
                i += 1
                j += 1
            }
            if i == n && j == m { return true }
            if i == n || j == m { return false }  // a body ends with a bracket or space, never in a number
            // A difference: only inside, or just after, a number outside strings.
            guard cls[j] == 2 || (j > 0 && cls[j - 1] == 2) else { return false }
            var back = 0
            while j - back > 0 && cls[j - back - 1] == 2 { back += 1 }
            let oldStart = j - back, newStart = i - back
            var oldEnd = oldStart
            while oldEnd < m && cls[oldEnd] == 2 { oldEnd += 1 }
            var newEnd = newStart
            while newEnd < n && (isNumberByte(a[newEnd]) || a[newEnd] == UInt8(ascii: "e") || a[newEnd] == UInt8(ascii: "E")
                                 || a[newEnd] == UInt8(ascii: "+")) { newEnd += 1 }
            guard oldEnd > oldStart, isPlainNumber(a + newStart, newEnd - newStart) else { return false }
            i = newEnd
            j = oldEnd
        }
    }

    @inline(__always) private static func isNumberByte(_ c: UInt8) -> Bool {
        c &- 48 < 10 || c == UInt8(ascii: "-") || c == UInt8(ascii: ".")
    }

    /// A strict JSON number without exponent, at most 17 characters (what the byte scanner accepts).
    private static func isPlainNumber(_ p: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        guard count > 0, count <= 17 else { return false }
        var k = 0
        if p[0] == UInt8(ascii: "-") { k = 1 }
        guard k < count, p[k] &- 48 < 10 else { return false }
        if p[k] == UInt8(ascii: "0") {
            k += 1
        } else {
            while k < count && p[k] &- 48 < 10 { k += 1 }
        }
        if k < count && p[k] == UInt8(ascii: ".") {
            k += 1
            guard k < count, p[k] &- 48 < 10 else { return false }
            while k < count && p[k] &- 48 < 10 { k += 1 }
        }
        return k == count
    }
}
