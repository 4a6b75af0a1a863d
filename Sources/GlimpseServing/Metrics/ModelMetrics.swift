import Foundation
import Metrics
import Synchronization

/// One model's per-request metric handles, made once when the model loads, so a request records
/// its stages, its energy and the variant's selection without looking each series up by its labels.
/// (Each look-up in `MetricHandles` hashes the label and every dimension string under a lock; a
/// classify call made ten of them.) The handles are the same objects `MetricHandles` keeps, so the
/// series and what `/metrics` shows do not change.
final class ModelMetrics: Sendable {
    private let decode: Timer
    private let queue: Timer
    private let inference: Timer
    private let total: Timer
    private let energy: Recorder
    private let family: String
    private let variant: String
    private let handles: MetricHandles
    /// The selection counter of each reason seen so far (a handful: most_accurate, overflow, …).
    private let selections = Mutex<[String: Counter]>([:])

    init(model: String, family: String, variant: String, metrics: ServingMetrics) {
        let handles = metrics.handles
        func stage(_ name: String) -> Timer { handles.timer(GlimpseMetrics.stageSeconds, [("stage", name), ("model", model)]) }
        decode = stage("decode")
        queue = stage("queue")
        inference = stage("inference")
        total = stage("total")
        energy = handles.recorder(GlimpseMetrics.inferenceJoules, [("model", model), ("variant", variant)])
        self.family = family
        self.variant = variant
        self.handles = handles
    }

    /// One answered image: its stages (nanoseconds), its share of the batch's energy, and why its
    /// variant served it.
    func recordAnswer(decodeNanos: UInt64, queueNanos: UInt64, inferenceNanos: UInt64, totalNanos: UInt64, joules: Double,
                      reason: String) {
        decode.recordNanoseconds(Int64(decodeNanos))
        queue.recordNanoseconds(Int64(queueNanos))
        inference.recordNanoseconds(Int64(inferenceNanos))
        total.recordNanoseconds(Int64(totalNanos))
        energy.record(joules)
        let counter = selections.withLock { known in
            if let counter = known[reason] { return counter }
            let counter = handles.counter(GlimpseMetrics.variantSelections, [("family", family), ("variant", variant), ("reason", reason)])
            known[reason] = counter
            return counter
        }
        counter.increment()
    }
}
