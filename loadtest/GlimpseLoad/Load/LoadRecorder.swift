import Histogram

/// Measurements of one connection (confined to its loop thread); merged after the run.
/// Latencies are recorded in microseconds.
public struct LoadRecorder: Sendable {
    public static let highestMicros: UInt64 = 3_600_000_000

    /// Latency of successful requests, from the intended send time (open loop) or the send time (closed loop).
    public var latency = LoadRecorder.histogram()
    /// Latency from when the HEADERS frame actually left, i.e. what a coordinated-omission-prone tool would report.
    public var serviceTime = LoadRecorder.histogram()
    public var serverQueue = LoadRecorder.histogram()
    public var serverInference = LoadRecorder.histogram()
    public var started = 0
    public var completed = 0
    public var succeeded = 0
    /// JSON-RPC calls answered plus images classified beyond the first of a call (one entry per result or error).
    public var calls = 0
    public var bytesReceived = 0
    public var byStatus: [Int: Int] = [:]
    public var byRPCError: [String: Int] = [:]
    public var byTransportError: [String: Int] = [:]
    public var variants: [String: Int] = [:]
    /// Per-second latency histograms of successful requests, keyed by second since measurement start.
    public var timeline: [Int: Histogram<UInt64>] = [:]
    /// Latest completion time (ns) of a measured request.
    public var lastCompletionNs: UInt64 = 0
    /// Reused for each response, so inspecting one allocates nothing.
    private var scratch = ResponseOutcome(status: 0)

    public init() {}

    static func histogram(_ digits: SignificantDigits = .three) -> Histogram<UInt64> {
        Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: highestMicros, numberOfSignificantValueDigits: digits)
    }

    static func micros(_ ns: UInt64) -> UInt64 { min(max(ns / 1000, 1), highestMicros) }

    /// Records one measured request. `intendedNs` is when it should have been sent.
    public mutating func record(_ result: Result<H2Response, H2Error>, intendedNs: UInt64, timing: H2Timing, measureStartNs: UInt64) {
        completed += 1
        lastCompletionNs = max(lastCompletionNs, timing.completed)
        switch result {
        case .failure(let error):
            byTransportError[error.label, default: 0] += 1
        case .success(let response):
            bytesReceived += response.body.count
            byStatus[response.status, default: 0] += 1
            ResponseInspector.inspect(status: response.status, body: response.body, into: &scratch)
            record(scratch)
            guard scratch.isSuccess else { return }
            succeeded += 1
            let total = timing.completed &- min(intendedNs, timing.completed)
            _ = latency.record(Self.micros(total))
            if timing.headersSent > 0 {
                _ = serviceTime.record(Self.micros(timing.completed &- min(timing.headersSent, timing.completed)))
            }
            let second = timing.completed > measureStartNs ? Int((timing.completed - measureStartNs) / 1_000_000_000) : 0
            _ = timeline[second, default: Self.histogram(.two)].record(Self.micros(total))
        }
    }

    mutating func record(_ outcome: ResponseOutcome) {
        calls += outcome.results.count + outcome.errors.count
        for error in outcome.errors { byRPCError[error.label, default: 0] += 1 }
        for result in outcome.results {
            variants[result.variant ?? "(none)", default: 0] += 1
            if let q = result.queueMs, q >= 0 { _ = serverQueue.record(Self.micros(UInt64(q * 1e6))) }
            if let i = result.inferenceMs, i >= 0 { _ = serverInference.record(Self.micros(UInt64(i * 1e6))) }
        }
    }

    /// A request that was never sent (client backlog full); counted as an error.
    public mutating func recordDropped(reason: String) {
        completed += 1
        byTransportError[reason, default: 0] += 1
    }

    public mutating func merge(_ other: LoadRecorder) {
        latency.add(other.latency)
        serviceTime.add(other.serviceTime)
        serverQueue.add(other.serverQueue)
        serverInference.add(other.serverInference)
        started += other.started
        completed += other.completed
        succeeded += other.succeeded
        calls += other.calls
        bytesReceived += other.bytesReceived
        byStatus.merge(other.byStatus, uniquingKeysWith: +)
        byRPCError.merge(other.byRPCError, uniquingKeysWith: +)
        byTransportError.merge(other.byTransportError, uniquingKeysWith: +)
        variants.merge(other.variants, uniquingKeysWith: +)
        for (second, h) in other.timeline { timeline[second, default: Self.histogram(.two)].add(h) }
        lastCompletionNs = max(lastCompletionNs, other.lastCompletionNs)
    }
}
