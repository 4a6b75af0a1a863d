import Dispatch
import GlimpseEngine
import GlimpseTensor

/// Monotonic nanoseconds.
@inline(__always)
func monotonicNanos() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// What a batch queue runs: the engine's `CompiledModel`, or a fake in tests.
protocol BatchModel: AnyObject, Sendable {
    var name: String { get }
    var inputs: [TensorSpec] { get }
    /// Intra-op threads one `run` may use.
    var threads: Int { get }
    /// Runs a batch; `parallel: false` keeps it on the calling thread.
    func run(_ inputs: [Tensor], parallel: Bool) throws -> [Tensor]
    /// Runs of one batch size before its time is steady: the engine times splitting a batch into
    /// single items against running it whole on its first runs (`BatchSplitting.auto`).
    var warmUpRuns: Int { get }
    /// CPU time consumed so far by the model's own engine threads (besides the calling thread).
    func engineThreadsCPUNanos() -> UInt64
    /// Frees what the model keeps for the batch sizes not in `keeping` (the engine's cached plans).
    func releaseCachedPlans(keeping: Set<Int>)
}

extension BatchModel {
    var warmUpRuns: Int { 1 }
    func releaseCachedPlans(keeping: Set<Int>) {}
}

extension CompiledModel: BatchModel {
    var warmUpRuns: Int { Self.batchSplitTrialRuns }
}

/// What one batch cost, for metrics and energy.
struct BatchCost: Sendable {
    var size: Int
    var wallNanos: UInt64
    var cpuNanos: UInt64
    var oldestWaitNanos: UInt64
}

/// The result of one item of a batch.
struct BatchItemResult: Sendable {
    /// The item's slice of the model's first output, as float32.
    var scores: [Float]
    var batchSize: Int
    var queueNanos: UInt64
    var inferenceNanos: UInt64
    /// The batch's CPU time divided by its size.
    var cpuNanosPerItem: UInt64
}
