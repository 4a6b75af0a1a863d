import Metrics

/// What the serving library records, through the handles it was given.
struct ServingMetrics: Sendable {
    static let none = ServingMetrics(MetricHandles.none)

    let handles: MetricHandles

    init(_ handles: MetricHandles) {
        self.handles = handles
    }

    func recordBatch(model: String, variant: String, size: Int, nanos: UInt64, oldestWaitNanos: UInt64) {
        handles.counter(GlimpseMetrics.batches, [("model", model), ("variant", variant)]).increment()
        handles.recorder(GlimpseMetrics.batchSize, [("model", model)]).record(size)
        handles.timer(GlimpseMetrics.batchWaitSeconds, [("model", model)]).recordNanoseconds(Int64(oldestWaitNanos))
    }

    func recordStage(_ stage: String, model: String, nanos: UInt64) {
        handles.timer(GlimpseMetrics.stageSeconds, [("stage", stage), ("model", model)]).recordNanoseconds(Int64(nanos))
    }

    func recordInferenceEnergy(model: String, variant: String, joules: Double) {
        handles.recorder(GlimpseMetrics.inferenceJoules, [("model", model), ("variant", variant)]).record(joules)
    }

    func queueDepth(model: String, _ depth: Int) {
        handles.gauge(GlimpseMetrics.queueDepth, [("model", model)]).record(depth)
    }

    func deadlineMargin(model: String, _ factor: Double) {
        handles.gauge(GlimpseMetrics.deadlineMargin, [("model", model)]).record(factor)
    }

    func modelLoad(model: String, outcome: String) {
        handles.counter(GlimpseMetrics.modelLoads, [("model", model), ("outcome", outcome)]).increment()
    }

    func splitShare(family: String, variant: String, share: Double) {
        handles.gauge(GlimpseMetrics.splitShare, [("family", family), ("variant", variant)]).record(share)
    }

    func variantSelected(family: String, variant: String, reason: String) {
        handles.counter(GlimpseMetrics.variantSelections, [("family", family), ("variant", variant), ("reason", reason)]).increment()
    }

    func inflight(_ count: Int) {
        handles.gauge(GlimpseMetrics.inflight, []).record(count)
    }
}
