import Foundation

/// A strict, allocation-free, single-pass JSON scanner for response bodies. Every method returns false
/// ("not sure") on anything outside the plain subset it handles; the caller then falls back to
/// `JSONSerialization`. It fills `outcome` as it goes; on false the caller discards what it added.
struct FastJSONScanner {
    var p: UnsafePointer<UInt8>
    let end: UnsafePointer<UInt8>
    static let maxDepth = 64

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
    @inline(__always) var byte: UInt8 { p < end ? p.pointee : 0 }

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
    /// An object with `model_name` and neither is a v2 infer response (see `FastJSONScanner+OpenInference`).
    mutating func call(into outcome: inout ResponseOutcome, depth: Int) -> Bool {
        guard depth <= Self.maxDepth else { return false }
        let mark = outcome.results.count
        var seen: UInt8 = 0
        var error: ResponseOutcome.CallError?
        var v2Model: String?
        var v2Label: String?
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
                } else if Self.keyIs(key, n, "model_name") && byte == UInt8(ascii: "\"") {
                    guard seen & 4 == 0, let (start, count) = string() else { return false }
                    seen |= 4
                    v2Model = String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
                } else if Self.keyIs(key, n, "outputs") && byte == UInt8(ascii: "[") {
                    guard seen & 8 == 0 else { return false }
                    seen |= 8
                    guard v2TopLabel(&v2Label, depth: depth + 1) else { return false }
                } else {
                    guard skipValue(depth: depth) else { return false }
                }
                guard let last = endOfElement(close: UInt8(ascii: "}")) else { return false }
                if last { break }
            }
        } else {
            p += 1
        }
        // An Open Inference Protocol infer response: one result, the model that served as its variant.
        if let v2Model, seen & 3 == 0 { outcome.results.append(.init(variant: v2Model, label: v2Label)) }
        if let error {
            outcome.results.removeSubrange(mark...)
            outcome.errors.append(error)
        }
        return true
    }

    /// `"error": {"code": ..., "data": {"reason": ...}}` (at `{`).
    mutating func callError(code: inout Int, reason: inout String?, depth: Int) -> Bool {
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
    mutating func errorData(reason: inout String?, depth: Int) -> Bool {
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
    mutating func images(into outcome: inout ResponseOutcome, depth: Int) -> Bool {
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
    mutating func image(into outcome: inout ResponseOutcome, depth: Int, lookForResults: Bool) -> Bool {
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
    mutating func topLabel(_ label: inout String?, depth: Int) -> Bool {
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
    mutating func timing(queue: inout Double?, inference: inout Double?, depth: Int) -> Bool {
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
}
