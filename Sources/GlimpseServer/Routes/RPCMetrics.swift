import GlimpseRPC
import GlimpseServing

enum RPCMetrics {
    /// Records calls that the classify handler does not record itself (it knows the model and variant).
    /// Method names not in the table are labelled "unknown", so a client cannot grow the label set.
    static func record(method: String, error: RPCError?, known: Set<String>) {
        if method == "classify" && (error == nil || error?.code != RPCError.invalidRequestCode) { return }
        let label = method.isEmpty ? "invalid" : (known.contains(method) ? method : "unknown")
        RequestMetrics.record(method: label, model: "", variant: "", outcome: error == nil ? "ok" : "error",
                              reason: error.map(GlimpseMethods.reasonLabel) ?? "")
    }
}
