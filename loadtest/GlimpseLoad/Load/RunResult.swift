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
        let stats = HistogramStats(h, percentiles: [50, 90, 99, 99.9])
        mean = stats.mean / 1000
        p50 = ms(stats.values[0])
        p90 = ms(stats.values[1])
        p99 = ms(stats.values[2])
        p999 = ms(stats.values[3])
        max = ms(h.max)
    }
}

/// `Histogram.mean` and `Histogram.valueAtPercentile(_:)` for several percentiles in one pass, with the
/// same arithmetic in the same order (so the same results). The library's own versions are not
/// inlinable, so each walks the histogram through unspecialized generic code, which costs a
/// report of one run milliseconds of CPU; its iterator is inlinable, so this walk is specialized.
struct HistogramStats {
    var mean: Double = 0
    var values: [UInt64]

    init(_ h: Histogram<UInt64>, percentiles: [Double]) {
        let total = h.totalCount
        values = Array(repeating: 0, count: percentiles.count)
        guard total > 0 else { return }
        // As in valueAtPercentile: 0 is the minimum, 100 and above the maximum recorded, otherwise the
        // first value whose cumulative count reaches the percentile's count.
        var thresholds = Array(repeating: UInt64.max, count: percentiles.count)
        var pending = 0
        let lowest = h.min
        for (i, percentile) in percentiles.enumerated() {
            if percentile == 0.0 {
                values[i] = lowest
            } else if percentile >= 100.0 {
                values[i] = h.maxRecorded
            } else {
                let requested = Swift.min(Swift.max(percentile.nextDown, 0.0), 100.0)
                let fpCount = (requested * Double(total)) / 100.0
                thresholds[i] = Swift.max(1, UInt64(fpCount.rounded(.up)))
                pending += 1
            }
        }
        let highest = h.maxRecorded
        var totalValue: Double = 0
        for iv in h.recordedValues() {
            // medianEquivalentForValue, spelled out from its inlinable parts.
            let median = h.lowestEquivalentForValue(iv.value) + (h.sizeOfEquivalentRangeForValue(iv.value) >> 1)
            totalValue += Double(median) * Double(iv.count)
            if pending > 0 {
                for i in thresholds.indices where thresholds[i] != .max && iv.totalCountToThisValue >= thresholds[i] {
                    values[i] = Swift.max(Swift.min(iv.value, highest), lowest)
                    thresholds[i] = .max
                    pending -= 1
                }
            }
        }
        mean = totalValue / Double(total)
    }
}

/// One second of a run: completions and latency percentiles (ms).
public struct TimelinePoint: Codable, Equatable, Sendable {
    public var second: Int
    public var count: UInt64
    public var p50: Double
    public var p99: Double
    public var max: Double
    /// Per-image results of the second's successful requests by variant (nil when none named one).
    public var variants: [String: Int]?
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
    /// Requests offered in the measured period: sent, plus arrivals the client dropped (open loop).
    public var offered: Int?
    /// The latency objective (ms) and the successes answered within it (from the intended send time).
    public var sloMs: Double?
    public var withinSLO: Int?
    /// `withinSLO / offered`: refusals, errors, timeouts, drops and late answers all count as misses.
    public var sloAttainment: Double?
    /// Open loop: the rate changes during the run.
    public var rateSteps: [RateStep]?

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
        let secondVariants = r.timelineVariants
        timeline = r.timeline.keys.sorted().compactMap { second in
            guard let h = r.timeline[second] else { return nil }
            let stats = HistogramStats(h, percentiles: [50, 99])
            return TimelinePoint(second: second, count: h.totalCount, p50: Double(stats.values[0]) / 1000,
                                 p99: Double(stats.values[1]) / 1000, max: Double(h.max) / 1000, variants: secondVariants[second])
        }
        offered = r.started + r.dropped
        if let slo = r.sloMicros {
            sloMs = Double(slo) / 1000
            withinSLO = r.withinSLO
            sloAttainment = r.started + r.dropped > 0 ? Double(r.withinSLO) / Double(r.started + r.dropped) : 0
        }
    }
}
