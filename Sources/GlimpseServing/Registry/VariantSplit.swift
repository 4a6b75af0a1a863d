import Foundation

/// Dynamic model selection by splitting the load: the most accurate variant takes as much of a
/// family's requests as the cores can carry, and only the excess goes to lighter variants.
///
/// The variants share the same cores. A variant with capacity μ (items per second, measured alone)
/// costs 1/μ seconds of the cores per item, so at an arrival rate λ the cores have 1/λ seconds per
/// request. The most accurate variant L and the next lighter one S then split the requests so the
/// cores are just saturated: L takes
///
///     f = (1/λ − 1/μ_S) / (1/μ_L − 1/μ_S), clamped to [0, 1]
///
/// and S the rest. The safety margin plans the cores at (1 − margin) of their time, i.e. uses
/// λ/(1 − margin) in the formula, so `f` is 1 up to (1 − margin)·μ_L and falls below the closed
/// form beyond it. With more than two variants the shares fill from the most accurate down: the
/// two adjacent variants (most accurate first) whose costs bracket 1/λ share the load; a variant that
/// is no cheaper than a more accurate one is never given a share.
///
/// Requests are assigned by the shares deterministically: a `client_id` hashes to a point of [0, 1)
/// that falls in one variant's share (the same client stays on the same variant while the split
/// holds), and other requests follow a smooth weighted round-robin, so the realized shares track the
/// split within one request. Each request is still checked against its deadline, and `min_accuracy`
/// still rules out variants. Everything here is pure: the caller passes the clock and the state.
public enum VariantSplit {
    public struct Variant: Sendable, Equatable {
        public var name: String
        /// Measured accuracy; nil ranks below every measured variant.
        public var accuracy: Double?
        /// Items per second the variant sustains alone (from its latency model); nil when not known yet.
        public var capacityPerSecond: Double?
        /// Predicted nanoseconds from now until a request sent now would be answered; nil when the
        /// latency model has not seen a batch yet (treated as meeting any deadline).
        public var predictedNanos: UInt64?

        public init(name: String, accuracy: Double?, capacityPerSecond: Double?, predictedNanos: UInt64? = nil) {
            self.name = name
            self.accuracy = accuracy
            self.capacityPerSecond = capacityPerSecond
            self.predictedNanos = predictedNanos
        }
    }

    public struct Share: Sendable, Equatable {
        public var name: String
        public var share: Double
        public init(name: String, share: Double) {
            self.name = name
            self.share = share
        }
    }

    public struct Policy: Sendable {
        /// Share of the cores' time the split keeps free (planned as if arrivals were λ/(1 − margin)).
        /// Below 0 (down to −0.5) it plans the cores beyond the capacity estimates: an experiment's
        /// knob, to find how far the split can go before deadlines are missed.
        public var margin: Double = 0.02
        /// A recomputed split replaces the current one only when some variant's share moves by at least this.
        public var band: Double = 0.03
        /// A split that gives more to the more accurate variants is adopted only once the current one
        /// has held this long (a split that gives them less is adopted at once: it protects deadlines).
        public var minHoldNanos: UInt64 = 1_000_000_000
        /// A variant takes a request with a deadline only when predicted to answer within this share of it.
        public var deadlineShare: Double = 0.7
        public init() {}
    }

    public enum Reason: String, Sendable {
        /// The most accurate variant, by its share of the split.
        case mostAccurate = "most_accurate"
        /// A lighter variant, by its share of the split: the load exceeds what the more accurate ones carry.
        case overflow = "overflow"
        /// The variant the split gave is below `min_accuracy`: the cheapest variant meeting it.
        case minAccuracy = "min_accuracy"
        /// The variant the split gave is predicted to miss the deadline: a lighter one that meets it.
        case deadline = "deadline"
        /// Neither the variant the split gave nor any lighter one is predicted to meet the deadline: the
        /// fastest variant meeting `min_accuracy`.
        case fastest = "fastest"
    }

    /// What the split remembers per family.
    public struct State: Sendable, Equatable {
        /// The split in force, most accurate first (empty before the first request).
        public var shares: [Share]
        /// When it was adopted.
        public var since: UInt64
        /// Smooth weighted round-robin credit of each variant.
        public var credits: [String: Double]

        public init(shares: [Share] = [], since: UInt64 = 0, credits: [String: Double] = [:]) {
            self.shares = shares
            self.since = since
            self.credits = credits
        }

        public func share(of name: String) -> Double {
            shares.first { $0.name == name }?.share ?? 0
        }
    }

    public struct Choice: Sendable, Equatable {
        public var name: String
        public var reason: Reason
        public var state: State
    }

    /// Most accurate first; among equals, the higher capacity first, then by name for a stable order.
    public static func ranked(_ variants: [Variant]) -> [Variant] {
        variants.sorted { a, b in
            let (x, y) = (a.accuracy ?? -1, b.accuracy ?? -1)
            if x != y { return x > y }
            let (p, q) = (a.capacityPerSecond ?? 0, b.capacityPerSecond ?? 0)
            if p != q { return p > q }
            return a.name < b.name
        }
    }

    /// The share of each variant (most accurate first, summing to 1) at `arrivalRate` items per second.
    /// Unknown or zero load, or an unknown capacity of the most accurate variant, gives it everything.
    public static func shares(_ variants: [Variant], arrivalRate: Double?, margin: Double) -> [Share] {
        let ranked = Self.ranked(variants)
        guard !ranked.isEmpty else { return [] }
        var result = ranked.map { Share(name: $0.name, share: 0) }
        // The chain of variants that are each cheaper than every more accurate one.
        var chain: [(index: Int, cost: Double)] = []
        for (i, v) in ranked.enumerated() {
            guard let mu = v.capacityPerSecond, mu > 0 else {
                if i == 0 { break }
                continue
            }
            let cost = 1 / mu
            if let last = chain.last, cost >= last.cost { continue }
            chain.append((i, cost))
        }
        guard let lambda = arrivalRate, lambda > 0, chain.first?.index == 0 else {
            result[0].share = 1
            return result
        }
        let budget = (1 - min(0.95, max(-0.5, margin))) / lambda
        if budget >= chain[0].cost {
            result[0].share = 1
            return result
        }
        for k in 0..<(chain.count - 1) {
            let (heavy, light) = (chain[k], chain[k + 1])
            if budget >= light.cost {
                let f = min(1, max(0, (budget - light.cost) / (heavy.cost - light.cost)))
                result[heavy.index].share = f
                result[light.index].share = 1 - f
                return result
            }
        }
        // Beyond even the lightest variant's capacity: it takes everything.
        result[chain[chain.count - 1].index].share = 1
        return result
    }

    /// The split in force after `target` was computed at `now`, with hysteresis.
    public static func adopt(_ target: [Share], state: State, now: UInt64, policy: Policy = .init()) -> State {
        var next = state
        let sameVariants = Set(target.map(\.name)) == Set(state.shares.map(\.name))
        guard sameVariants, !state.shares.isEmpty else {
            next.shares = target
            next.since = now
            return next
        }
        let moved = target.map { abs($0.share - state.share(of: $0.name)) }.max() ?? 0
        // Small moves are noise in the arrival rate, except the last step back to the most accurate alone.
        let backToTop = target.first?.share == 1 && moved > 1e-9
        guard moved >= policy.band || backToTop else { return state }
        // More to the more accurate variants: the first variant whose share differs gains.
        let upgrade = target.first { abs($0.share - state.share(of: $0.name)) > 1e-12 }.map { $0.share > state.share(of: $0.name) } ?? false
        if upgrade && now &- state.since < policy.minHoldNanos { return state }
        next.shares = target
        next.since = now
        return next
    }

    /// Chooses the variant for one request and returns the state to keep. nil when no variant meets
    /// `minAccuracy` (or there are none). `clientID` pins a client to a point of the split.
    public static func select(_ variants: [Variant], arrivalRate: Double?, deadlineNanos: UInt64?, minAccuracy: Double?,
                              clientID: String?, state: State, now: UInt64, policy: Policy = .init()) -> Choice? {
        let ranked = Self.ranked(variants)
        guard !ranked.isEmpty else { return nil }
        let eligible = ranked.filter { v in minAccuracy.map { (v.accuracy ?? -1) >= $0 } ?? true }
        guard !eligible.isEmpty else { return nil }
        var state = adopt(shares(ranked, arrivalRate: arrivalRate, margin: policy.margin), state: state, now: now, policy: policy)

        // The variant the split gives this request.
        let assigned: String
        if let clientID {
            assigned = point(of: clientID, in: state.shares)
        } else {
            var best: String?
            var bestCredit = -Double.infinity
            for s in state.shares {
                let credit = state.credits[s.name, default: 0] + s.share
                state.credits[s.name] = credit
                if s.share > 0, credit > bestCredit { (best, bestCredit) = (s.name, credit) }
            }
            assigned = best ?? ranked[0].name
            state.credits[assigned, default: 0] -= 1
            // Variants left the split (or were given none of it): no credit builds up for them.
            for s in state.shares where s.share == 0 { state.credits[s.name] = 0 }
        }

        let start: Int
        let reason: Reason
        if let i = eligible.firstIndex(where: { $0.name == assigned }) {
            start = i
            reason = assigned == ranked[0].name ? .mostAccurate : .overflow
        } else {
            // Below min_accuracy: the cheapest variant that meets it.
            start = eligible.indices.min { a, b in
                let (x, y) = (eligible[a].capacityPerSecond ?? 0, eligible[b].capacityPerSecond ?? 0)
                return x != y ? x > y : a > b
            } ?? eligible.count - 1
            reason = .minAccuracy
        }
        guard let deadline = deadlineNanos else {
            return Choice(name: eligible[start].name, reason: reason, state: state)
        }
        func fits(_ v: Variant) -> Bool {
            guard let p = v.predictedNanos else { return true }
            return Double(p) <= Double(deadline) * policy.deadlineShare
        }
        for i in start..<eligible.count where fits(eligible[i]) {
            return Choice(name: eligible[i].name, reason: i == start ? reason : .deadline, state: state)
        }
        let fastest = eligible.min { ($0.predictedNanos ?? 0) < ($1.predictedNanos ?? 0) } ?? eligible[start]
        return Choice(name: fastest.name, reason: .fastest, state: state)
    }

    /// The variant whose share holds `clientID`'s point of [0, 1), most accurate share first.
    static func point(of clientID: String, in shares: [Share]) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for b in clientID.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        // FNV's low bits mix poorly for short strings: finish with a 64-bit mixer.
        h ^= h >> 33; h = h &* 0xff51_afd7_ed55_8ccd; h ^= h >> 33
        let u = Double(h >> 11) / Double(1 << 53)
        var upper = 0.0
        for s in shares where s.share > 0 {
            upper += s.share
            if u < upper { return s.name }
        }
        return shares.last { $0.share > 0 }?.name ?? shares.first?.name ?? ""
    }
}
