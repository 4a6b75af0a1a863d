import Metrics

/// Metric names and recording helpers. Only swift-metrics is used here; the executable decides
/// the backend (Prometheus).
enum ServingMetrics {
    static func recordBatch(model: String, size: Int, nanos: UInt64) {
        Counter(label: "glimpse_batches_total", dimensions: [("model", model)]).increment()
        Recorder(label: "glimpse_batch_size", dimensions: [("model", model)], aggregate: true).record(size)
        Timer(label: "glimpse_inference_seconds", dimensions: [("model", model)]).recordNanoseconds(Int64(nanos))
    }

    static func recordRequest(method: String, model: String, outcome: String, reason: String) {
        Counter(label: "glimpse_requests_total",
                dimensions: [("method", method), ("model", model), ("outcome", outcome), ("reason", reason)]).increment()
    }

    static func recordStage(_ stage: String, model: String, nanos: UInt64) {
        Timer(label: "glimpse_stage_seconds", dimensions: [("stage", stage), ("model", model)]).recordNanoseconds(Int64(nanos))
    }
}
