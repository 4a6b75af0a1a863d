import Histogram

/// Latency percentiles in milliseconds.
public struct LatencySummary: Codable, Equatable, Sendable {
    public var count: UInt64
    public var mean: Double
    public var p50: Double
    public var p90: Double
    public var p99: Double
    public var p999: Double
    public var max: Double

    public init(count: UInt64, mean: Double, p50: Double, p90: Double, p99: Double, p999: Double, max: Double) {
        self.count = count
        self.mean = mean
        self.p50 = p50
        self.p90 = p90
        self.p99 = p99
        self.p999 = p999
        self.max = max
    }

    /// Summarizes a histogram of microseconds (HdrHistogram percentiles, reported in ms).
    public init(micros h: Histogram<UInt64>) {
        func ms(_ v: UInt64) -> Double { Double(v) / 1000 }
        count = h.totalCount
        guard h.totalCount > 0 else { mean = 0; p50 = 0; p90 = 0; p99 = 0; p999 = 0; max = 0; return }
        mean = h.mean / 1000
        p50 = ms(h.valueAtPercentile(50))
        p90 = ms(h.valueAtPercentile(90))
        p99 = ms(h.valueAtPercentile(99))
        p999 = ms(h.valueAtPercentile(99.9))
        max = ms(h.max)
    }
}

/// One second of a run: completions and latency percentiles (ms).
public struct TimelinePoint: Codable, Equatable, Sendable {
    public var second: Int
    public var count: UInt64
    public var p50: Double
    public var p99: Double
    public var max: Double
}

/// The figures of one run (one point of a sweep), ready for the table, CSV, JSON and SVG.
public struct RunResult: Codable, Equatable, Sendable {
    public var mode: String
    /// Closed loop: the concurrency; open loop: the target rate (req/s).
    public var target: Double
    public var connections: Int
    /// Seconds from the end of warm-up to the last measured completion.
    public var elapsed: Double
    public var requests: Int
    public var succeeded: Int
    public var errors: Int
    /// Successful requests per second over `elapsed`.
    public var achievedRate: Double
    public var calls: Int
    public var latency: LatencySummary
    public var serviceTime: LatencySummary
    public var serverQueue: LatencySummary
    public var serverInference: LatencySummary
    public var byStatus: [String: Int]
    public var byRPCError: [String: Int]
    public var byTransportError: [String: Int]
    public var variants: [String: Int]
    public var timeline: [TimelinePoint]
    /// Things the reader should know (e.g. a connection the server closed early).
    public var notes: [String] = []

    public init(mode: LoadMode, connections: Int, recorder r: LoadRecorder, measureStartNs: UInt64, measureEndNs: UInt64) {
        self.mode = mode.label
        switch mode {
        case .closed(let c): target = Double(c)
        case .constantRate(let rate), .poisson(let rate): target = rate
        }
        self.connections = connections
        let end = r.lastCompletionNs > measureStartNs ? r.lastCompletionNs : measureEndNs
        elapsed = Double(end &- min(measureStartNs, end)) / 1e9
        requests = r.completed
        succeeded = r.succeeded
        errors = r.completed - r.succeeded
        achievedRate = elapsed > 0 ? Double(r.succeeded) / elapsed : 0
        calls = r.calls
        latency = LatencySummary(micros: r.latency)
        serviceTime = LatencySummary(micros: r.serviceTime)
        serverQueue = LatencySummary(micros: r.serverQueue)
        serverInference = LatencySummary(micros: r.serverInference)
        byStatus = Dictionary(uniqueKeysWithValues: r.byStatus.map { (String($0.key), $0.value) })
        byRPCError = r.byRPCError
        byTransportError = r.byTransportError
        variants = r.variants
        timeline = r.timeline.keys.sorted().compactMap { second in
            guard let h = r.timeline[second] else { return nil }
            return TimelinePoint(second: second, count: h.totalCount, p50: Double(h.valueAtPercentile(50)) / 1000,
                                 p99: Double(h.valueAtPercentile(99)) / 1000, max: Double(h.max) / 1000)
        }
    }
}
