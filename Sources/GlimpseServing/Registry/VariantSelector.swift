/// Dynamic model selection: which variant of a family serves a request.
///
/// A pure function of what the scheduler predicts, so it is tested with made-up clocks and
/// predictions. The rule: among the variants meeting `min_accuracy`, the most accurate one whose
/// predicted completion (queue wait + its batch's latency, from the latency model) meets the deadline.
/// Hysteresis keeps it from flapping: after a downgrade, a more accurate variant is taken back only
/// once its prediction fits within `upgradeHeadroom` of the deadline and the current choice has been
/// held for `minHoldNanos`, and only if it can sustain the family's current arrival rate (its
/// throughput, from its latency model, with the same headroom): under a sustained overload the choice
/// then stays on the variant that keeps up instead of bouncing back every `minHoldNanos` into one that
/// cannot, whose queue would fill up to the deadline each time.
public enum VariantSelector {
    public struct Candidate: Sendable, Equatable {
        public var name: String
        /// Measured accuracy; nil ranks below every measured variant.
        public var accuracy: Double?
        /// Predicted nanoseconds from now until a request sent now would be answered; nil when the
        /// latency model has not seen a batch yet (treated as meeting any deadline).
        public var predictedNanos: UInt64?
        /// Items per second the variant sustains (from its latency model); nil when not known yet.
        public var capacityPerSecond: Double?

        public init(name: String, accuracy: Double?, predictedNanos: UInt64?, capacityPerSecond: Double? = nil) {
            self.name = name
            self.accuracy = accuracy
            self.predictedNanos = predictedNanos
            self.capacityPerSecond = capacityPerSecond
        }
    }

    /// What the selector remembers per family.
    public struct State: Sendable, Equatable {
        public var current: String?
        public var since: UInt64
        public init(current: String? = nil, since: UInt64 = 0) {
            self.current = current
            self.since = since
        }
    }

    public struct Policy: Sendable {
        /// A more accurate variant is taken back only when its prediction is at most this share of the deadline.
        public var upgradeHeadroom: Double = 0.7
        /// ... and after the current choice has served this long.
        public var minHoldNanos: UInt64 = 1_000_000_000
        public init() {}
    }

    public enum Reason: String, Sendable {
        /// No deadline: the most accurate variant.
        case mostAccurate = "most_accurate"
        /// The most accurate variant meets the deadline.
        case meetsDeadline = "meets_deadline"
        /// A lighter variant, because more accurate ones are predicted to miss the deadline (or, by
        /// hysteresis, have not yet shown enough headroom to come back).
        case deadline = "deadline"
        /// No variant is predicted to meet the deadline: the fastest.
        case fastest = "fastest"
    }

    public struct Choice: Sendable, Equatable {
        public var name: String
        public var reason: Reason
        public var state: State
    }

    /// nil when no candidate meets `minAccuracy` (or there are no candidates). `arrivalRate` is the
    /// family's recent items per second (nil: unknown, no capacity check).
    public static func select(_ candidates: [Candidate], deadlineNanos: UInt64?, minAccuracy: Double?,
                              state: State, now: UInt64, arrivalRate: Double? = nil, policy: Policy = .init()) -> Choice? {
        let eligible = candidates.filter { c in minAccuracy.map { (c.accuracy ?? -1) >= $0 } ?? true }
        // Most accurate first; among equals, the faster first, then by name for a stable order.
        let ranked = eligible.sorted { a, b in
            let (x, y) = (a.accuracy ?? -1, b.accuracy ?? -1)
            if x != y { return x > y }
            let (p, q) = (a.predictedNanos ?? 0, b.predictedNanos ?? 0)
            if p != q { return p < q }
            return a.name < b.name
        }
        guard let best = ranked.first else { return nil }
        func held(_ name: String, _ reason: Reason) -> Choice {
            let next = state.current == name ? state : State(current: name, since: now)
            return Choice(name: name, reason: reason, state: next)
        }
        guard let deadline = deadlineNanos else { return held(best.name, .mostAccurate) }
        func fits(_ c: Candidate, _ share: Double) -> Bool {
            guard let p = c.predictedNanos else { return true }
            return Double(p) <= Double(deadline) * share
        }
        func keepsUp(_ c: Candidate) -> Bool {
            guard let rate = arrivalRate, let capacity = c.capacityPerSecond else { return true }
            return rate <= capacity * policy.upgradeHeadroom
        }
        let currentRank = state.current.flatMap { name in ranked.firstIndex { $0.name == name } }
        let mayUpgrade = now &- state.since >= policy.minHoldNanos
        for (rank, c) in ranked.enumerated() {
            let isUpgrade = currentRank.map { rank < $0 } ?? false
            let ok = isUpgrade ? (mayUpgrade && fits(c, policy.upgradeHeadroom) && keepsUp(c)) : fits(c, 1)
            if ok { return held(c.name, rank == 0 ? .meetsDeadline : .deadline) }
        }
        let fastest = ranked.min { ($0.predictedNanos ?? 0) < ($1.predictedNanos ?? 0) } ?? best
        return held(fastest.name, .fastest)
    }
}
