import Foundation
import GlimpseTensor

/// The intended send times of an open-loop run, in nanoseconds from the start. Pure and deterministic
/// for a seed, so tests drive it with a fake clock. Each connection gets its own schedule at
/// `rate / connections`: constant-rate schedules are staggered by `index / rate`, and the sum of
/// independent Poisson processes is a Poisson process of the total rate.
///
/// A schedule may change its rate at given times (a step load): `steps` lists (time, new rate), and
/// the first arrival after a step's time is drawn from that step on, at the new rate. A constant
/// schedule keeps its stagger (the same fraction of a period) across steps.
public struct ArrivalSchedule: Sendable {
    public enum Kind: Sendable { case constant, poisson }

    /// A change of rate at `atNs` (ns from the start of the schedule) to `rate` arrivals per second.
    public struct Step: Sendable, Equatable {
        public var atNs: Double
        public var rate: Double
        public init(atNs: Double, rate: Double) {
            self.atNs = atNs
            self.rate = rate
        }
    }

    public let kind: Kind
    /// Arrivals per second on this schedule now (the rate of the step in force).
    public private(set) var rate: Double
    private var rng: SplitMix64
    private var nextTime: Double
    private var index: UInt64 = 0
    /// Steps not yet in force, earliest first.
    private var steps: [Step]
    /// Constant schedules: the offset as a fraction of one period, kept across steps.
    private let stagger: Double

    public init(kind: Kind, rate: Double, offsetNs: Double = 0, seed: UInt64 = 1, steps: [Step] = []) {
        self.kind = kind
        self.rate = rate
        self.rng = SplitMix64(seed: seed)
        self.nextTime = offsetNs
        self.steps = steps.filter { $0.rate > 0 && $0.rate.isFinite }.sorted { $0.atNs < $1.atNs }
        self.stagger = rate > 0 ? (offsetNs * rate / 1e9).truncatingRemainder(dividingBy: 1) : 0
        if kind == .poisson { nextTime += exponentialGap() }
        enterSteps()
    }

    /// The intended time of the next arrival (ns from start), without consuming it.
    public var peek: UInt64 { UInt64(max(nextTime, 0)) }

    /// Consumes and returns the next intended arrival time (ns from start).
    public mutating func next() -> UInt64 {
        let t = peek
        index += 1
        switch kind {
        case .constant: nextTime += 1e9 / rate
        case .poisson: nextTime += exponentialGap()
        }
        enterSteps()
        return t
    }

    /// Moves to the steps whose time the next arrival has reached: the next arrival is drawn again
    /// from the step's time at its rate (memoryless for Poisson; the same stagger for constant).
    private mutating func enterSteps() {
        while let step = steps.first, nextTime >= step.atNs {
            steps.removeFirst()
            rate = step.rate
            switch kind {
            case .constant: nextTime = step.atNs + stagger * 1e9 / rate
            case .poisson: nextTime = step.atNs + exponentialGap()
            }
        }
    }

    private mutating func exponentialGap() -> Double {
        // Inverse CDF of Exp(rate); u in (0, 1] so the log is finite.
        let u = (Double(rng.next() >> 11) + 1) / 9_007_199_254_740_992.0
        return -Foundation.log(u) / rate * 1e9
    }
}

/// The seedable PRNG of open-loop runs (so they are reproducible): Glimpse's one SplitMix64.
public typealias SplitMix64 = GlimpseTensor.SplitMix64
