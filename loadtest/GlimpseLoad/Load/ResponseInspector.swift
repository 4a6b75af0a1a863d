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

/// Parses responses of `/rpc` (object or batch array) and Open Inference Protocol infer responses (the
/// model that served, the first classification element's label); other bodies are judged by status alone.
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
    package static func inspect(status: Int, body: [UInt8], into outcome: inout ResponseOutcome) -> Bool {
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
    package static func inspectWithFoundation(body: [UInt8], into outcome: inout ResponseOutcome) {
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
            } else if object["error"] == nil, let result = FastJSONScanner.v2Result(object) {
                outcome.results.append(result)
            }
        }
    }
}
