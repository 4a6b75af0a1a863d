import Histogram

/// Measurements of one connection (confined to its loop thread); merged after the run.
/// Latencies are recorded in microseconds.
public struct LoadRecorder: Sendable {
    public static let highestMicros: UInt64 = 3_600_000_000

    /// Latency of successful requests, from the intended send time (open loop) or the send time (closed loop).
    public var latency = LoadRecorder.histogram()
    /// Latency from when the HEADERS frame actually left, i.e. what a coordinated-omission-prone tool would report.
    public var serviceTime = LoadRecorder.histogram()
    /// Server-reported queue and inference times (classify responses). Built on first use: most runs
    /// (health, plain GETs) never record one, and each empty histogram is a 188 KB array to clear.
    public var serverQueue: Histogram<UInt64> {
        get { serverQueueStore ?? Self.histogram() }
        set { serverQueueStore = newValue }
        _modify {
            if serverQueueStore == nil { serverQueueStore = Self.histogram() }
            yield &serverQueueStore!
        }
    }
    public var serverInference: Histogram<UInt64> {
        get { serverInferenceStore ?? Self.histogram() }
        set { serverInferenceStore = newValue }
        _modify {
            if serverInferenceStore == nil { serverInferenceStore = Self.histogram() }
            yield &serverInferenceStore!
        }
    }
    private var serverQueueStore: Histogram<UInt64>?
    private var serverInferenceStore: Histogram<UInt64>?
    public var started = 0
    public var completed = 0
    public var succeeded = 0
    /// Arrivals dropped by the client (open loop, backlog full); never sent.
    public var dropped = 0
    /// Latency objective in microseconds (nil: not counted) and the successes answered within it,
    /// latency counted from the intended send time.
    public var sloMicros: UInt64?
    public var withinSLO = 0
    /// Per body of the corpus, the true class of each image it sends (empty: unlabelled; see
    /// `RequestCorpus.expectedLabels`). Answers whose top-1 label matches are counted as correct.
    public var expectedLabels: [[String]] = []
    /// Per-image answers of successful requests that had an expected label, those whose top-1 label
    /// was right, and of those the ones answered within the SLO.
    public var labelledAnswers = 0
    public var correct = 0
    public var correctWithinSLO = 0
    /// Correct answers by variant (with `variants`, the accuracy of each variant's answers).
    public var variantCorrect: [String: Int] = [:]
    /// Per second of intended send time since measurement start: requests offered, successes within the
    /// SLO, and correct answers within the SLO (images).
    public var perSecond: [SecondCounts] = []

    public struct SecondCounts: Sendable, Equatable {
        public var offered = 0
        public var withinSLO = 0
        public var correctWithinSLO = 0
        public init(offered: Int = 0, withinSLO: Int = 0, correctWithinSLO: Int = 0) {
            self.offered = offered
            self.withinSLO = withinSLO
            self.correctWithinSLO = correctWithinSLO
        }
    }

    private mutating func countOffered(intendedNs: UInt64, measureStartNs: UInt64) -> Int {
        let second = intendedNs > measureStartNs ? Int((intendedNs - measureStartNs) / 1_000_000_000) : 0
        if second >= perSecond.count { perSecond.append(contentsOf: repeatElement(SecondCounts(), count: second + 1 - perSecond.count)) }
        perSecond[second].offered += 1
        return second
    }

    /// JSON-RPC calls answered plus images classified beyond the first of a call (one entry per result or error).
    public var calls = 0
    public var bytesReceived = 0
    public var byRPCError: [String: Int] = [:]
    public var byTransportError: [String: Int] = [:]
    /// Latest completion time (ns) of a measured request.
    public var lastCompletionNs: UInt64 = 0
    /// Reused for each response, so inspecting one allocates nothing.
    private var scratch = ResponseOutcome(status: 0)
    /// The last body whose outcome follows from its shape alone (see `ResponseShape`).
    private var shape = ResponseShape()

    // Responses mostly repeat the previous status, variant and second: those are counted in a run beside
    // the dictionaries (no hashing per response) and folded in when the key changes or on reading.
    private var statusCounts: [Int: Int] = [:]
    private var statusRun = (key: 0, count: 0)
    private var variantCounts: [String: Int] = [:]
    private var variantRun = (key: "", count: 0)
    private var timelineStore: [Int: Histogram<UInt64>] = [:]
    /// Latencies of `currentSecond` (not yet in `timelineStore`); meaningful while `currentSecond >= 0`.
    private var currentSecond = -1
    private var currentSecondLatency = LoadRecorder.histogram(.two)
    /// Per-image results of successful requests by variant, per second (as `timeline`); the current
    /// second's counts are a short list (few variants), folded in when the second changes.
    private var timelineVariantsStore: [Int: [String: Int]] = [:]
    private var currentSecondVariants: [(key: String, count: Int)] = []

    /// Responses by HTTP status.
    public var byStatus: [Int: Int] {
        get {
            var counts = statusCounts
            if statusRun.count > 0 { counts[statusRun.key, default: 0] += statusRun.count }
            return counts
        }
        set {
            statusCounts = newValue
            statusRun = (0, 0)
        }
    }

    /// Per-image results by variant served ("(none)" when a result names none).
    public var variants: [String: Int] {
        get {
            var counts = variantCounts
            if variantRun.count > 0 { counts[variantRun.key, default: 0] += variantRun.count }
            return counts
        }
        set {
            variantCounts = newValue
            variantRun = ("", 0)
        }
    }

    /// Per-second latency histograms of successful requests, keyed by second since measurement start.
    public var timeline: [Int: Histogram<UInt64>] {
        get {
            var store = timelineStore
            if currentSecond >= 0 { Self.fold(currentSecondLatency, second: currentSecond, into: &store) }
            return store
        }
        set {
            timelineStore = newValue
            currentSecond = -1
            currentSecondVariants.removeAll()
        }
    }

    /// Per-second counts of the variants served (results of successful requests), keyed as `timeline`.
    public var timelineVariants: [Int: [String: Int]] {
        get {
            var store = timelineVariantsStore
            if currentSecond >= 0 { Self.fold(currentSecondVariants, second: currentSecond, into: &store) }
            return store
        }
        set {
            timelineVariantsStore = newValue
            currentSecondVariants.removeAll()
        }
    }

    private static func fold(_ counts: [(key: String, count: Int)], second: Int, into store: inout [Int: [String: Int]]) {
        guard !counts.isEmpty else { return }
        for (key, count) in counts { store[second, default: [:]][key, default: 0] += count }
    }

    private mutating func countSecondVariant(_ variant: String?) {
        let key = variant ?? "(none)"
        if let i = currentSecondVariants.firstIndex(where: { $0.key == key }) {
            currentSecondVariants[i].count += 1
        } else {
            currentSecondVariants.append((key, 1))
        }
    }

    private static func fold(_ h: Histogram<UInt64>, second: Int, into store: inout [Int: Histogram<UInt64>]) {
        if store[second] == nil {
            store[second] = h
        } else {
            store[second]?.add(h)
        }
    }

    private mutating func countStatus(_ status: Int) {
        if statusRun.key == status && statusRun.count > 0 {
            statusRun.count += 1
        } else {
            if statusRun.count > 0 { statusCounts[statusRun.key, default: 0] += statusRun.count }
            statusRun = (status, 1)
        }
    }

    private mutating func countVariant(_ variant: String?) {
        let key = variant ?? "(none)"
        if variantRun.count > 0 && variantRun.key == key {
            variantRun.count += 1
        } else {
            if variantRun.count > 0 { variantCounts[variantRun.key, default: 0] += variantRun.count }
            variantRun = (key, 1)
        }
    }

    private mutating func recordTimeline(second: Int, micros: UInt64) {
        if second != currentSecond {
            if currentSecond >= 0 {
                Self.fold(currentSecondLatency, second: currentSecond, into: &timelineStore)
                currentSecondLatency = Self.histogram(.two)
                Self.fold(currentSecondVariants, second: currentSecond, into: &timelineVariantsStore)
                currentSecondVariants.removeAll(keepingCapacity: true)
            }
            currentSecond = second
        }
        _ = currentSecondLatency.record(micros)
    }

    /// Milliseconds from a response body as microseconds, clamped (no trap on absurd values).
    private static func micros(ms: Double) -> UInt64 {
        let ns = ms * 1e6
        return micros(ns < 18_000_000_000_000_000_000 ? UInt64(ns) : UInt64.max)
    }

    public init() {}

    static func histogram(_ digits: SignificantDigits = .three) -> Histogram<UInt64> {
        Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: highestMicros, numberOfSignificantValueDigits: digits)
    }

    static func micros(_ ns: UInt64) -> UInt64 { min(max(ns / 1000, 1), highestMicros) }

    /// Records one measured request. `intendedNs` is when it should have been sent.
    public mutating func record(_ result: Result<H2Response, H2Error>, intendedNs: UInt64, timing: H2Timing, measureStartNs: UInt64,
                                bodyIndex: Int = -1) {
        switch result {
        case .failure(let error):
            completed += 1
            _ = countOffered(intendedNs: intendedNs, measureStartNs: measureStartNs)
            lastCompletionNs = max(lastCompletionNs, timing.completed)
            byTransportError[error.label, default: 0] += 1
        case .success(let response):
            recordResponse(status: response.status, body: response.body, intendedNs: intendedNs, timing: timing, measureStartNs: measureStartNs,
                           bodyIndex: bodyIndex)
        }
    }

    /// Records one measured request that got a response.
    mutating func recordResponse(status: Int, body: [UInt8], intendedNs: UInt64, timing: H2Timing, measureStartNs: UInt64, bodyIndex: Int = -1) {
        completed += 1
        let offeredSecond = countOffered(intendedNs: intendedNs, measureStartNs: measureStartNs)
        lastCompletionNs = max(lastCompletionNs, timing.completed)
        bytesReceived += body.count
        countStatus(status)
        let success: Bool
        let sameShape = shape.matches(body)
        if sameShape {
            // Same shape as the remembered body: same results, no errors; success is the status.
            calls += shape.outcome.results.count
            for result in shape.outcome.results { countVariant(result.variant) }
            success = (200..<300).contains(status)
        } else {
            if ResponseInspector.inspect(status: status, body: body, into: &scratch) {
                shape.remember(body, outcome: scratch)
            }
            record(scratch)
            success = scratch.isSuccess
        }
        guard success else { return }
        succeeded += 1
        let total = Self.micros(timing.completed &- min(intendedNs, timing.completed))
        _ = latency.record(total)
        var inTime = false
        if let slo = sloMicros, total <= slo {
            withinSLO += 1
            perSecond[offeredSecond].withinSLO += 1
            inTime = true
        }
        if !expectedLabels.isEmpty && bodyIndex >= 0 {
            let expected = expectedLabels[bodyIndex % expectedLabels.count]
            let results = sameShape ? shape.outcome.results : scratch.results
            for (k, result) in results.enumerated() where k < expected.count {
                labelledAnswers += 1
                guard result.label == expected[k] else { continue }
                correct += 1
                variantCorrect[result.variant ?? "(none)", default: 0] += 1
                if inTime {
                    correctWithinSLO += 1
                    perSecond[offeredSecond].correctWithinSLO += 1
                }
            }
        }
        if timing.headersSent > 0 {
            _ = serviceTime.record(Self.micros(timing.completed &- min(timing.headersSent, timing.completed)))
        }
        let second = timing.completed > measureStartNs ? Int((timing.completed - measureStartNs) / 1_000_000_000) : 0
        recordTimeline(second: second, micros: total)
        for result in sameShape ? shape.outcome.results : scratch.results { countSecondVariant(result.variant) }
    }

    mutating func record(_ outcome: ResponseOutcome) {
        calls += outcome.results.count + outcome.errors.count
        for error in outcome.errors { byRPCError[error.label, default: 0] += 1 }
        for result in outcome.results {
            countVariant(result.variant)
            if let q = result.queueMs, q >= 0 { _ = serverQueue.record(Self.micros(ms: q)) }
            if let i = result.inferenceMs, i >= 0 { _ = serverInference.record(Self.micros(ms: i)) }
        }
    }

    /// A request that was never sent (client backlog full); counted as an error.
    public mutating func recordDropped(reason: String, intendedNs: UInt64 = 0, measureStartNs: UInt64 = 0) {
        completed += 1
        _ = countOffered(intendedNs: intendedNs, measureStartNs: measureStartNs)
        dropped += 1
        byTransportError[reason, default: 0] += 1
    }

    public mutating func merge(_ other: LoadRecorder) {
        latency.add(other.latency)
        serviceTime.add(other.serviceTime)
        if let h = other.serverQueueStore { serverQueue.add(h) }
        if let h = other.serverInferenceStore { serverInference.add(h) }
        started += other.started
        completed += other.completed
        succeeded += other.succeeded
        dropped += other.dropped
        withinSLO += other.withinSLO
        labelledAnswers += other.labelledAnswers
        correct += other.correct
        correctWithinSLO += other.correctWithinSLO
        variantCorrect.merge(other.variantCorrect, uniquingKeysWith: +)
        if expectedLabels.isEmpty { expectedLabels = other.expectedLabels }
        if other.perSecond.count > perSecond.count {
            perSecond.append(contentsOf: repeatElement(SecondCounts(), count: other.perSecond.count - perSecond.count))
        }
        for (i, c) in other.perSecond.enumerated() {
            perSecond[i].offered += c.offered
            perSecond[i].withinSLO += c.withinSLO
            perSecond[i].correctWithinSLO += c.correctWithinSLO
        }
        sloMicros = sloMicros ?? other.sloMicros
        calls += other.calls
        bytesReceived += other.bytesReceived
        byStatus.merge(other.byStatus, uniquingKeysWith: +)
        byRPCError.merge(other.byRPCError, uniquingKeysWith: +)
        byTransportError.merge(other.byTransportError, uniquingKeysWith: +)
        variants.merge(other.variants, uniquingKeysWith: +)
        // Both stores are read before either is set (setting one ends the current second of both).
        var store = timeline
        var variantStore = timelineVariants
        for (second, h) in other.timeline { store[second, default: Self.histogram(.two)].add(h) }
        for (second, counts) in other.timelineVariants {
            variantStore[second, default: [:]].merge(counts, uniquingKeysWith: +)
        }
        timeline = store
        timelineVariants = variantStore
        lastCompletionNs = max(lastCompletionNs, other.lastCompletionNs)
    }
}
