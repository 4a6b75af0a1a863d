/// Every metric Glimpse records, with its help text. Libraries record through swift-metrics only;
/// the executable picks the backend (Prometheus) and uses `help` and `buckets` to describe them.
public enum GlimpseMetrics {
    public static let requests = "glimpse_requests_total"
    public static let stageSeconds = "glimpse_request_stage_seconds"
    public static let batchSize = "glimpse_batch_size"
    public static let batchWaitSeconds = "glimpse_batch_wait_seconds"
    public static let queueDepth = "glimpse_queue_depth"
    public static let deadlineMargin = "glimpse_deadline_margin"
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
    public static let buildInfo = "glimpse_build_info"

    public static let help: [String: String] = [
        requests: "JSON-RPC calls and REST requests by method, model, variant, outcome (ok, error, or cancelled when the client went away before the answer) and reason.",
        stageSeconds: "Per-image latency of each stage (queue, decode, inference, total) in seconds.",
        batchSize: "Items per batch run by the engine.",
        batchWaitSeconds: "Time the oldest request of each batch waited in the queue, in seconds.",
        queueDepth: "Requests waiting in a model's batching queue.",
        deadlineMargin: "Factor on a model queue's predicted completion times, raised by requests that expired in its queue (1 when none did lately).",
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
        buildInfo: "Always 1; the label isa names the engine's kernel variant (portable, avx2, avx512, avx512vnni).",
    ]

    /// Histogram buckets for value recorders (durations use the seconds buckets below).
    public static let valueBuckets: [String: [Double]] = [
        batchSize: [1, 2, 4, 8, 16, 32, 64],
        inferenceJoules: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    ]

    public static let secondsBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
}
