import Foundation

/// Open Inference Protocol (v2) infer responses: `{"model_name": ..., "outputs": [{"data": ["score:index:label", ...]}]}`.
/// The model that served is the result's variant and the first classification element's label its top-1.
extension FastJSONScanner {
    /// `"outputs": [...]` (at `[`): the label of the first output's first `data` element; the rest is skipped.
    mutating func v2TopLabel(_ label: inout String?, depth: Int) -> Bool {
        guard depth <= Self.maxDepth else { return false }
        p += 1
        skipSpace()
        if byte == UInt8(ascii: "]") { p += 1; return true }
        var first = true
        while true {
            skipSpace()
            if first && byte == UInt8(ascii: "{") {
                guard v2Output(&label, depth: depth + 1) else { return false }
            } else {
                guard skipValue(depth: depth) else { return false }
            }
            first = false
            guard let last = endOfElement(close: UInt8(ascii: "]")) else { return false }
            if last { return true }
        }
    }

    /// One output tensor (at `{`): its `data`'s first element, when that is a string.
    mutating func v2Output(_ label: inout String?, depth: Int) -> Bool {
        guard depth <= Self.maxDepth else { return false }
        p += 1
        guard firstMember() else { return false }
        if byte == UInt8(ascii: "}") { p += 1; return true }
        var seen = false
        while true {
            guard let (key, n) = memberKey() else { return false }
            if Self.keyIs(key, n, "data") && byte == UInt8(ascii: "[") {
                guard !seen else { return false }
                seen = true
                guard v2FirstElement(&label, depth: depth + 1) else { return false }
            } else {
                guard skipValue(depth: depth) else { return false }
            }
            guard let last = endOfElement(close: UInt8(ascii: "}")) else { return false }
            if last { return true }
        }
    }

    /// A `data` array (at `[`): the label of its first element when that is a string; the rest is skipped.
    private mutating func v2FirstElement(_ label: inout String?, depth: Int) -> Bool {
        guard depth <= Self.maxDepth else { return false }
        p += 1
        skipSpace()
        if byte == UInt8(ascii: "]") { p += 1; return true }
        var first = true
        while true {
            skipSpace()
            if first && byte == UInt8(ascii: "\"") {
                guard let (start, count) = string() else { return false }
                label = Self.classificationLabel(UnsafeBufferPointer(start: start, count: count))
            } else {
                guard skipValue(depth: depth) else { return false }
            }
            first = false
            guard let last = endOfElement(close: UInt8(ascii: "]")) else { return false }
            if last { return true }
        }
    }

    /// The label of a classification element `score:index:label` (nil for `score:index`, unlabelled).
    static func classificationLabel(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard let first = bytes.firstIndex(of: UInt8(ascii: ":")),
              let second = bytes[(first + 1)...].firstIndex(of: UInt8(ascii: ":")) else { return nil }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[(second + 1)...]), as: UTF8.self)
    }

    /// The same reading of a v2 response object for the `JSONSerialization` fallback.
    static func v2Result(_ object: [String: Any]) -> ResponseOutcome.CallResult? {
        guard let model = object["model_name"] as? String else { return nil }
        let outputs = object["outputs"] as? [Any]
        let element = ((outputs?.first as? [String: Any])?["data"] as? [Any])?.first as? String
        let label = element.flatMap { text in Array(text.utf8).withUnsafeBufferPointer { classificationLabel($0) } }
        return ResponseOutcome.CallResult(variant: model, label: label)
    }
}
