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
    /// Requests whose intended send time fell in this second, and of them the successes within the SLO
    /// (nil without an SLO) and their share.
    public var offered: Int?
    public var withinSLO: Int?
    public var sloAttainment: Double?
    /// With labels: correct top-1 answers within the SLO among the images of this second's offered
    /// requests, and their share of those images.
    public var correctWithinSLO: Int?
    public var effectiveAccuracy: Double?
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
    /// With labels (`--labels`): images offered (offered requests × images per request), answers with
    /// a label, correct top-1 answers, and those within the SLO (all successes without an SLO).
    public var labelledOffered: Int?
    public var labelledAnswers: Int?
    public var correct: Int?
    public var correctWithinSLO: Int?
    /// `correctWithinSLO / labelledOffered`: the share of all offered images answered right and in time.
    public var effectiveAccuracy: Double?
    /// `correct / labelledAnswers`: the accuracy of the answers given, whatever their latency.
    public var answeredAccuracy: Double?
    /// Per variant: the share of its answers that were correct.
    public var variantAccuracy: [String: Double]?

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
        let timelineSeconds = r.timeline
        let perImage = r.expectedLabels.first?.count ?? 0
        let labelled = !r.expectedLabels.isEmpty && perImage > 0
        let hasSLO = r.sloMicros != nil
        let seconds = Set(timelineSeconds.keys).union(r.perSecond.indices.filter { r.perSecond[$0].offered > 0 })
        timeline = seconds.sorted().map { second in
            var point = TimelinePoint(second: second, count: 0, p50: 0, p99: 0, max: 0, variants: secondVariants[second])
            if let h = timelineSeconds[second] {
                let stats = HistogramStats(h, percentiles: [50, 99])
                point.count = h.totalCount
                point.p50 = Double(stats.values[0]) / 1000
                point.p99 = Double(stats.values[1]) / 1000
                point.max = Double(h.max) / 1000
            }
            if second < r.perSecond.count {
                let c = r.perSecond[second]
                point.offered = c.offered
                if hasSLO {
                    point.withinSLO = c.withinSLO
                    point.sloAttainment = c.offered > 0 ? Double(c.withinSLO) / Double(c.offered) : nil
                }
                if labelled {
                    point.correctWithinSLO = c.correctWithinSLO
                    point.effectiveAccuracy = c.offered > 0 ? Double(c.correctWithinSLO) / Double(c.offered * perImage) : nil
                }
            }
            return point
        }
        if labelled {
            let images = (r.started + r.dropped) * perImage
            labelledOffered = images
            labelledAnswers = r.labelledAnswers
            correct = r.correct
            // Without an SLO every success counts as in time.
            correctWithinSLO = hasSLO ? r.correctWithinSLO : r.correct
            effectiveAccuracy = images > 0 ? Double(correctWithinSLO ?? 0) / Double(images) : 0
            answeredAccuracy = r.labelledAnswers > 0 ? Double(r.correct) / Double(r.labelledAnswers) : nil
            var byVariant: [String: Double] = [:]
            for (variant, answers) in r.variants where answers > 0 {
                byVariant[variant] = Double(r.variantCorrect[variant, default: 0]) / Double(answers)
            }
            variantAccuracy = byVariant
        }
        offered = r.started + r.dropped
        if let slo = r.sloMicros {
            sloMs = Double(slo) / 1000
            withinSLO = r.withinSLO
            sloAttainment = r.started + r.dropped > 0 ? Double(r.withinSLO) / Double(r.started + r.dropped) : 0
        }
    }
}
