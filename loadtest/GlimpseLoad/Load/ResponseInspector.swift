import Foundation

/// What one HTTP response says: per image classified, the variant served and server timings; per failed call, the error.
public struct ResponseOutcome: Equatable, Sendable {
    public struct CallResult: Equatable, Sendable {
        public var variant: String?
        public var queueMs: Double?
        public var inferenceMs: Double?
        public var batchSize: Int?
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
    /// every response without allocating.
    static func inspect(status: Int, body: [UInt8], into outcome: inout ResponseOutcome) {
        outcome.status = status
        outcome.results.removeAll(keepingCapacity: true)
        outcome.errors.removeAll(keepingCapacity: true)
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
                    outcome.results.append(.init(variant: item["variant"] as? String,
                                                 queueMs: (timing?["queue"] as? NSNumber)?.doubleValue,
                                                 inferenceMs: (timing?["inference"] as? NSNumber)?.doubleValue,
                                                 batchSize: (item["batch_size"] as? NSNumber)?.intValue))
                }
            }
        }
    }
}

/// A strict, allocation-free JSON scanner for response bodies. Every method returns false ("not sure")
/// on anything outside the plain subset it handles; the caller then falls back to `JSONSerialization`.
struct FastJSONScanner {
    private let p: UnsafeBufferPointer<UInt8>
    private var i = 0
    private static let maxDepth = 64

    init(_ bytes: UnsafeBufferPointer<UInt8>) { p = bytes }

    // MARK: Document

    /// Scans the whole body (object or batch array) and fills `outcome`; false: use the fallback.
    mutating func scanDocument(into outcome: inout ResponseOutcome) -> Bool {
        skipSpace()
        guard i < p.count else { return false }
        if p[i] == UInt8(ascii: "{") {
            guard call(into: &outcome, depth: 1) else { return false }
        } else if p[i] == UInt8(ascii: "[") {
            i += 1
            skipSpace()
            guard i < p.count else { return false }
            if p[i] == UInt8(ascii: "]") {
                i += 1
            } else {
                while true {
                    skipSpace()
                    guard i < p.count else { return false }
                    if p[i] == UInt8(ascii: "{") {
                        guard call(into: &outcome, depth: 2) else { return false }
                    } else {
                        guard skipValue(depth: 1) else { return false }
                    }
                    guard let end = endOfElement(close: UInt8(ascii: "]")) else { return false }
                    if end { break }
                }
            }
        } else {
            return false
        }
        skipSpace()
        return i == p.count
    }

    /// One JSON-RPC response object (at `{`).
    private mutating func call(into outcome: inout ResponseOutcome, depth: Int) -> Bool {
        var error = -1, result = -1
        let ok = members(depth: depth) { key, at in
            if Self.equals(key, "error") {
                guard error < 0 else { return false }
                error = at
            } else if Self.equals(key, "result") {
                guard result < 0 else { return false }
                result = at
            }
            return true
        }
        guard ok else { return false }
        let resume = i
        defer { i = resume }
        if error >= 0 && p[error] == UInt8(ascii: "{") {
            i = error
            return callError(into: &outcome, depth: depth + 1)
        }
        guard result >= 0 else { return true }
        i = result
        switch p[result] {
        case UInt8(ascii: "["):
            return imageArray(into: &outcome, depth: depth + 1)
        case UInt8(ascii: "{"):
            var results = -1
            let ok = members(depth: depth + 1) { key, at in
                if Self.equals(key, "results") {
                    guard results < 0 else { return false }
                    results = at
                }
                return true
            }
            guard ok else { return false }
            if results >= 0 && p[results] == UInt8(ascii: "[") {
                i = results
                return imageArray(into: &outcome, depth: depth + 2)
            }
            i = result
            return image(into: &outcome, depth: depth + 1)
        default:
            return true  // a scalar result: no per-image entries
        }
    }

    /// `"error": {"code": ..., "data": {"reason": ...}}` (at `{`).
    private mutating func callError(into outcome: inout ResponseOutcome, depth: Int) -> Bool {
        var code = -1, data = -1
        let ok = members(depth: depth) { key, at in
            if Self.equals(key, "code") {
                guard code < 0 else { return false }
                code = at
            } else if Self.equals(key, "data") {
                guard data < 0 else { return false }
                data = at
            }
            return true
        }
        guard ok else { return false }
        var value = 0
        if code >= 0 {
            i = code
            switch number() {
            case .integer(let v): value = v
            case .decimal, .invalid: return false
            case .none: break
            }
        }
        var reason: String?
        if data >= 0 && p[data] == UInt8(ascii: "{") {
            i = data
            var at = -1
            let ok = members(depth: depth + 1) { key, position in
                if Self.equals(key, "reason") {
                    guard at < 0 else { return false }
                    at = position
                }
                return true
            }
            guard ok else { return false }
            if at >= 0 && p[at] == UInt8(ascii: "\"") {
                i = at
                guard let range = string() else { return false }
                reason = text(range)
            }
        }
        outcome.errors.append(.init(code: value, reason: reason))
        return true
    }

    /// An array of per-image results (at `[`); only its objects count.
    private mutating func imageArray(into outcome: inout ResponseOutcome, depth: Int) -> Bool {
        i += 1
        skipSpace()
        guard i < p.count else { return false }
        if p[i] == UInt8(ascii: "]") { i += 1; return true }
        while true {
            skipSpace()
            guard i < p.count else { return false }
            if p[i] == UInt8(ascii: "{") {
                guard image(into: &outcome, depth: depth + 1) else { return false }
            } else {
                guard skipValue(depth: depth) else { return false }
            }
            guard let end = endOfElement(close: UInt8(ascii: "]")) else { return false }
            if end { return true }
        }
    }

    /// One per-image result object (at `{`).
    private mutating func image(into outcome: inout ResponseOutcome, depth: Int) -> Bool {
        var variant = -1, timing = -1, batch = -1
        let ok = members(depth: depth) { key, at in
            if Self.equals(key, "variant") {
                guard variant < 0 else { return false }
                variant = at
            } else if Self.equals(key, "timing_ms") {
                guard timing < 0 else { return false }
                timing = at
            } else if Self.equals(key, "batch_size") {
                guard batch < 0 else { return false }
                batch = at
            }
            return true
        }
        guard ok else { return false }
        let resume = i
        defer { i = resume }
        var entry = ResponseOutcome.CallResult()
        if variant >= 0 && p[variant] == UInt8(ascii: "\"") {
            i = variant
            guard let range = string() else { return false }
            entry.variant = text(range)
        }
        if timing >= 0 && p[timing] == UInt8(ascii: "{") {
            i = timing
            var queue = -1, inference = -1
            let ok = members(depth: depth + 1) { key, at in
                if Self.equals(key, "queue") {
                    guard queue < 0 else { return false }
                    queue = at
                } else if Self.equals(key, "inference") {
                    guard inference < 0 else { return false }
                    inference = at
                }
                return true
            }
            guard ok else { return false }
            if queue >= 0 {
                i = queue
                switch number() {
                case .integer(let v): entry.queueMs = Double(v)
                case .decimal(let d): entry.queueMs = d
                case .invalid: return false
                case .none: break
                }
            }
            if inference >= 0 {
                i = inference
                switch number() {
                case .integer(let v): entry.inferenceMs = Double(v)
                case .decimal(let d): entry.inferenceMs = d
                case .invalid: return false
                case .none: break
                }
            }
        }
        if batch >= 0 {
            i = batch
            switch number() {
            case .integer(let v): entry.batchSize = v
            case .decimal, .invalid: return false
            case .none: break
            }
        }
        outcome.results.append(entry)
        return true
    }

    // MARK: Structure

    /// Walks the members of the object at `{`, calling `visit(key, valueOffset)` for each before skipping
    /// its value; leaves `i` after the closing `}`.
    private mutating func members(depth: Int, _ visit: (UnsafeBufferPointer<UInt8>, Int) -> Bool) -> Bool {
        guard depth <= Self.maxDepth else { return false }
        i += 1
        skipSpace()
        guard i < p.count else { return false }
        if p[i] == UInt8(ascii: "}") { i += 1; return true }
        while true {
            skipSpace()
            guard i < p.count, p[i] == UInt8(ascii: "\""), let key = string() else { return false }
            skipSpace()
            guard i < p.count, p[i] == UInt8(ascii: ":") else { return false }
            i += 1
            skipSpace()
            guard i < p.count else { return false }
            guard visit(UnsafeBufferPointer(rebasing: p[key]), i) else { return false }
            guard skipValue(depth: depth) else { return false }
            guard let end = endOfElement(close: UInt8(ascii: "}")) else { return false }
            if end { return true }
        }
    }

    /// After an element: `,` (false) or the closing bracket (true); nil on anything else.
    private mutating func endOfElement(close: UInt8) -> Bool? {
        skipSpace()
        guard i < p.count else { return nil }
        if p[i] == UInt8(ascii: ",") { i += 1; return false }
        if p[i] == close { i += 1; return true }
        return nil
    }

    /// Skips (and checks) one value at `i`.
    private mutating func skipValue(depth: Int) -> Bool {
        guard i < p.count else { return false }
        switch p[i] {
        case UInt8(ascii: "\""):
            return string() != nil
        case UInt8(ascii: "{"):
            return members(depth: depth + 1) { _, _ in true }
        case UInt8(ascii: "["):
            guard depth < Self.maxDepth else { return false }
            i += 1
            skipSpace()
            guard i < p.count else { return false }
            if p[i] == UInt8(ascii: "]") { i += 1; return true }
            while true {
                skipSpace()
                guard skipValue(depth: depth + 1) else { return false }
                guard let end = endOfElement(close: UInt8(ascii: "]")) else { return false }
                if end { return true }
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
        guard p.count - i >= n else { return false }
        let w = word.utf8Start
        for k in 0..<n where p[i + k] != w[k] { return false }
        i += n
        return true
    }

    /// A string at `"` with only printable ASCII and no escapes; returns the content's range.
    private mutating func string() -> Range<Int>? {
        i += 1
        let start = i
        while i < p.count {
            let c = p[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                return start..<(i - 1)
            }
            if c == UInt8(ascii: "\\") || c < 0x20 || c >= 0x80 { return nil }
            i += 1
        }
        return nil
    }

    private func text(_ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: p[range]), as: UTF8.self)
    }

    // MARK: Numbers

    /// A strict JSON number without exponent, at most 17 characters (so `JSONSerialization` reads it as
    /// an exact `Int64`/`UInt64` or as `Double(text)`). Returns its range and whether it has a fraction.
    private mutating func numberSpan() -> (Range<Int>, Bool)? {
        let start = i
        if i < p.count && p[i] == UInt8(ascii: "-") { i += 1 }
        guard i < p.count, Self.isDigit(p[i]) else { return nil }
        if p[i] == UInt8(ascii: "0") {
            i += 1
        } else {
            while i < p.count && Self.isDigit(p[i]) { i += 1 }
        }
        var fraction = false
        if i < p.count && p[i] == UInt8(ascii: ".") {
            i += 1
            guard i < p.count, Self.isDigit(p[i]) else { return nil }
            while i < p.count && Self.isDigit(p[i]) { i += 1 }
            fraction = true
        }
        if i < p.count && (p[i] == UInt8(ascii: "e") || p[i] == UInt8(ascii: "E")) { return nil }
        guard i - start <= 17 else { return nil }
        return (start..<i, fraction)
    }

    enum Number { case none, integer(Int), decimal(Double), invalid }

    /// The value at `i` as `NSNumber` would give it: `.none` for a string, object, array or null (not a
    /// number); `.invalid` when unsure (booleans, malformed).
    private mutating func number() -> Number {
        guard i < p.count else { return .invalid }
        let c = p[i]
        guard c == UInt8(ascii: "-") || Self.isDigit(c) else {
            return c == UInt8(ascii: "t") || c == UInt8(ascii: "f") ? .invalid : .none
        }
        guard let (range, fraction) = numberSpan() else { return .invalid }
        var negative = false
        var mantissa: Int64 = 0
        var scale = 0
        for k in range {
            let d = p[k]
            if d == UInt8(ascii: "-") { negative = true; continue }
            if d == UInt8(ascii: ".") { scale = range.upperBound - k - 1; continue }
            mantissa = mantissa &* 10 &+ Int64(d &- 48)  // at most 16 digits: no overflow
        }
        if !fraction { return .integer(Int(negative ? -mantissa : mantissa)) }
        // Exact fast path (Clinger): mantissa < 2^53 and a power of ten that is exact in a Double.
        if mantissa < (1 << 53) && scale <= 22 {
            let value = Double(mantissa) / Self.powersOfTen[scale]
            return .decimal(negative ? -value : value)
        }
        let parsed = Double(String(decoding: UnsafeBufferPointer(rebasing: p[range]), as: UTF8.self))
        return parsed.map { .decimal($0) } ?? .invalid
    }

    /// 1e0 ... 1e22, each exact (built by multiplying exact values).
    private static let powersOfTen: [Double] = {
        var table: [Double] = [1]
        for _ in 1...22 { table.append(table[table.count - 1] * 10) }
        return table
    }()

    @inline(__always) private static func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }

    @inline(__always) private mutating func skipSpace() {
        while i < p.count {
            let c = p[i]
            guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
            i += 1
        }
    }

    @inline(__always) private static func equals(_ key: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
        let n = name.utf8CodeUnitCount
        guard key.count == n else { return false }
        let w = name.utf8Start
        for k in 0..<n where key[k] != w[k] { return false }
        return true
    }
}
