import Foundation
import Metrics

/// Every metric Glimpse records, with its help text. Libraries record through swift-metrics only;
/// the executable picks the backend (Prometheus) and uses `help` and `buckets` to describe them.
public enum GlimpseMetrics {
    public static let requests = "glimpse_requests_total"
    public static let stageSeconds = "glimpse_request_stage_seconds"
    public static let batchSize = "glimpse_batch_size"
    public static let batchWaitSeconds = "glimpse_batch_wait_seconds"
    public static let queueDepth = "glimpse_queue_depth"
    public static let batches = "glimpse_batches_total"
    public static let variantSelections = "glimpse_variant_selections_total"
    public static let splitShare = "glimpse_variant_split_share"
    public static let inflight = "glimpse_inflight_requests"
    public static let modelLoads = "glimpse_model_load_events_total"
    public static let residentBytes = "glimpse_process_resident_memory_bytes"
    public static let cpuSeconds = "glimpse_process_cpu_seconds_total"
    public static let energyJoules = "glimpse_energy_joules_total"
    public static let inferenceJoules = "glimpse_inference_energy_joules"
    public static let powerWatts = "glimpse_power_watts"
    public static let wattsPerCore = "glimpse_energy_watts_per_core"

    public static let help: [String: String] = [
        requests: "JSON-RPC calls and REST requests by method, model, variant, outcome (ok or error) and reason.",
        stageSeconds: "Per-image latency of each stage (queue, decode, inference, total) in seconds.",
        batchSize: "Items per batch run by the engine.",
        batchWaitSeconds: "Time the oldest request of each batch waited in the queue, in seconds.",
        queueDepth: "Requests waiting in a model's batching queue.",
        batches: "Batches run by the engine.",
        variantSelections: "Model variants chosen to serve requests, with the reason.",
        splitShare: "Share of a family's requests the current split gives each variant (0 to 1).",
        inflight: "Requests being processed (decoding, queued or running).",
        modelLoads: "Model load and unload events by outcome.",
        residentBytes: "Resident set size of the process in bytes.",
        cpuSeconds: "CPU time of the process (user + system) in seconds.",
        energyJoules: "Energy in joules: RAPL package energy (source=rapl) or CPU seconds times watts per core (source=estimate).",
        inferenceJoules: "Energy attributed to one inference in joules (batch CPU time times watts per core, split across the batch).",
        powerWatts: "Mean power over the last sampling interval in watts.",
        wattsPerCore: "Watts attributed to one busy core (configured, or calibrated from RAPL).",
    ]

    /// Histogram buckets for value recorders (durations use the seconds buckets below).
    public static let valueBuckets: [String: [Double]] = [
        batchSize: [1, 2, 4, 8, 16, 32, 64],
        inferenceJoules: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    ]

    public static let secondsBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
}

/// Metric objects kept by label and dimensions once the backend is bootstrapped, so a hot path
/// (several records per image) does not build a new one every time, which makes the backend look
/// it up, validate its names and sort its labels. Off until `enable()`: before the bootstrap the
/// objects would belong to the no-op backend.
public final class MetricHandles: @unchecked Sendable {
    public static let shared = MetricHandles()

    private struct Key: Hashable {
        let label: String
        let dimensions: [String]
    }

    private let lock = NSLock()
    private var enabled = false
    private var handles: [Key: AnyObject] = [:]
    /// A bound on distinct series kept (dimensions come from model names and error reasons, both
    /// bounded, but a cap keeps a mistake from growing the table without limit).
    private let capacity = 4096

    /// Call right after `MetricsSystem.bootstrap`.
    public func enable() {
        lock.lock()
        enabled = true
        handles.removeAll()
        lock.unlock()
    }

    func handle<T: AnyObject>(_ label: String, _ dimensions: [(String, String)], make: () -> T) -> T {
        lock.lock()
        guard enabled else {
            lock.unlock()
            return make()
        }
        var flat: [String] = []
        flat.reserveCapacity(dimensions.count * 2)
        for (k, v) in dimensions {
            flat.append(k)
            flat.append(v)
        }
        let key = Key(label: label, dimensions: flat)
        if let h = handles[key] as? T {
            lock.unlock()
            return h
        }
        let h = make()
        if handles.count < capacity { handles[key] = h }
        lock.unlock()
        return h
    }

    func counter(_ label: String, _ dimensions: [(String, String)]) -> Counter {
        handle(label, dimensions) { Counter(label: label, dimensions: dimensions) }
    }

    func timer(_ label: String, _ dimensions: [(String, String)]) -> Timer {
        handle(label, dimensions) { Timer(label: label, dimensions: dimensions) }
    }

    func recorder(_ label: String, _ dimensions: [(String, String)]) -> Recorder {
        handle(label, dimensions) { Recorder(label: label, dimensions: dimensions, aggregate: true) }
    }

    func gauge(_ label: String, _ dimensions: [(String, String)]) -> Gauge {
        handle(label, dimensions) { Gauge(label: label, dimensions: dimensions) }
    }
}

enum ServingMetrics {
    static let handles = MetricHandles.shared

    static func recordBatch(model: String, variant: String, size: Int, nanos: UInt64, oldestWaitNanos: UInt64) {
        handles.counter(GlimpseMetrics.batches, [("model", model), ("variant", variant)]).increment()
        handles.recorder(GlimpseMetrics.batchSize, [("model", model)]).record(size)
        handles.timer(GlimpseMetrics.batchWaitSeconds, [("model", model)]).recordNanoseconds(Int64(oldestWaitNanos))
    }

    static func recordStage(_ stage: String, model: String, nanos: UInt64) {
        handles.timer(GlimpseMetrics.stageSeconds, [("stage", stage), ("model", model)]).recordNanoseconds(Int64(nanos))
    }

    static func recordInferenceEnergy(model: String, variant: String, joules: Double) {
        handles.recorder(GlimpseMetrics.inferenceJoules, [("model", model), ("variant", variant)]).record(joules)
    }

    static func queueDepth(model: String, _ depth: Int) {
        handles.gauge(GlimpseMetrics.queueDepth, [("model", model)]).record(depth)
    }

    static func modelLoad(model: String, outcome: String) {
        handles.counter(GlimpseMetrics.modelLoads, [("model", model), ("outcome", outcome)]).increment()
    }

    static func splitShare(family: String, variant: String, share: Double) {
        handles.gauge(GlimpseMetrics.splitShare, [("family", family), ("variant", variant)]).record(share)
    }

    static func variantSelected(family: String, variant: String, reason: String) {
        handles.counter(GlimpseMetrics.variantSelections, [("family", family), ("variant", variant), ("reason", reason)]).increment()
    }
}

/// Public recording helpers for the layers above (RPC, server).
public enum RequestMetrics {
    public static func record(method: String, model: String, variant: String, outcome: String, reason: String) {
        MetricHandles.shared.counter(GlimpseMetrics.requests, [
            ("method", method), ("model", model), ("variant", variant), ("outcome", outcome), ("reason", reason),
        ]).increment()
    }
}
