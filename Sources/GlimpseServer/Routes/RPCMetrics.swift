import GlimpseRPC
import GlimpseServing

/// The one place `glimpse_requests_total` is recorded: every JSON-RPC call and every REST request
/// that serves a method, as the dispatcher reports them.
enum RPCMetrics {
    /// Labels stay bounded: method names not in the table are labelled "unknown", and a model name
    /// is used only when it names a loaded model or family. A successful `classify` is labelled with
    /// the family and the variant that served it.
    static func record(_ call: RPCCallOutcome, known: Set<String>, registry: ModelRegistry, into metrics: MetricHandles) {
        let method = call.method.isEmpty ? "invalid" : (known.contains(call.method) ? call.method : "unknown")
        var model = "", variant = ""
        if (call.method == "classify" || call.method == "v2.infer") && call.error?.code != RPCError.invalidRequestCode {
            (model, variant) = labels(call, registry: registry)
        }
        metrics.recordRequest(method: method, model: model, variant: variant, outcome: call.cancelled ? "cancelled" : call.error == nil ? "ok" : "error",
                              reason: call.error.map(GlimpseMethods.reasonLabel) ?? "")
    }

    /// The family and variant that served a classify call, else what it asked for when that is loaded.
    static func labels(_ call: RPCCallOutcome, registry: ModelRegistry) -> (model: String, variant: String) {
        if let served = call.served { return served }
        var served = call.result
        if case .array(let items)? = served { served = items.first }
        if let family = served?["model"]?.stringValue, let variant = served?["variant"]?.stringValue {
            return (family, variant)
        }
        let requested = call.params?["model"]?.stringValue ?? ""
        if let loaded = registry.model(named: requested) { return (requested, loaded.metadata.variant) }
        if registry.all.contains(where: { $0.metadata.family == requested }) { return (requested, "") }
        return ("unknown", "")
    }
}
