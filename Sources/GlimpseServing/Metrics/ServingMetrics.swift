import Metrics

/// What the serving library records, through the handles it was given.
struct ServingMetrics: Sendable {
    static let none = ServingMetrics(MetricHandles.none)

    let handles: MetricHandles

    init(_ handles: MetricHandles) {
        self.handles = handles
    }

    /// What each batch of a model records, with its handles looked up once.
    func batchRecorder(model: String, variant: String) -> @Sendable (_ size: Int, _ oldestWaitNanos: UInt64) -> Void {
        let batches = handles.counter(GlimpseMetrics.batches, [("model", model), ("variant", variant)])
        let sizes = handles.recorder(GlimpseMetrics.batchSize, [("model", model)])
        let waits = handles.timer(GlimpseMetrics.batchWaitSeconds, [("model", model)])
        return { size, oldestWaitNanos in
            batches.increment()
            sizes.record(size)
            waits.recordNanoseconds(Int64(oldestWaitNanos))
        }
    }

    /// The queue-depth gauge of a model, for a queue to keep (it records on every request).
    func queueDepthGauge(model: String) -> Gauge {
        handles.gauge(GlimpseMetrics.queueDepth, [("model", model)])
    }

    /// The deadline-margin gauge of a model, for a queue to keep (it records on every batch).
    func deadlineMarginGauge(model: String) -> Gauge {
        handles.gauge(GlimpseMetrics.deadlineMargin, [("model", model)])
    }

    func modelLoad(model: String, outcome: String) {
        handles.counter(GlimpseMetrics.modelLoads, [("model", model), ("outcome", outcome)]).increment()
    }

    func splitShare(family: String, variant: String, share: Double) {
        handles.gauge(GlimpseMetrics.splitShare, [("family", family), ("variant", variant)]).record(share)
    }

    /// The gauge of images in flight, for a counter to keep (it records twice per request).
    func inflightGauge() -> Gauge {
        handles.gauge(GlimpseMetrics.inflight, [])
    }
}
