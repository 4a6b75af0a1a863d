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
public enum ResponseInspector {
    public static func inspect(status: Int, body: [UInt8]) -> ResponseOutcome {
        var outcome = ResponseOutcome(status: status)
        guard let first = body.first(where: { $0 > 32 }), first == UInt8(ascii: "{") || first == UInt8(ascii: "[") else {
            return outcome
        }
        guard let json = try? JSONSerialization.jsonObject(with: Data(body)) else { return outcome }
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
        return outcome
    }
}
