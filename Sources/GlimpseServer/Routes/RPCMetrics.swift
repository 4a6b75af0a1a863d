import GlimpseRPC
import Metrics

enum RPCMetrics {
    static func record(method: String, error: RPCError?) {
        let outcome = error == nil ? "ok" : "error"
        let reason = error.map { $0.data?["reason"]?.stringValue ?? String($0.code) } ?? ""
        Counter(label: "glimpse_rpc_calls_total",
                dimensions: [("method", method.isEmpty ? "invalid" : method), ("outcome", outcome), ("reason", reason)]).increment()
    }
}
