import Foundation

/// The intended send times of an open-loop run, in nanoseconds from the start. Pure and deterministic
/// for a seed, so tests drive it with a fake clock. Each connection gets its own schedule at
/// `rate / connections`: constant-rate schedules are staggered by `index / rate`, and the sum of
/// independent Poisson processes is a Poisson process of the total rate.
public struct ArrivalSchedule: Sendable {
    public enum Kind: Sendable { case constant, poisson }

    public let kind: Kind
    /// Arrivals per second on this schedule.
    public let rate: Double
    private var rng: SplitMix64
    private var nextTime: Double
    private var index: UInt64 = 0

    public init(kind: Kind, rate: Double, offsetNs: Double = 0, seed: UInt64 = 1) {
        self.kind = kind
        self.rate = rate
        self.rng = SplitMix64(seed: seed)
        self.nextTime = offsetNs
        if kind == .poisson { nextTime += exponentialGap() }
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
        return t
    }

    private mutating func exponentialGap() -> Double {
        // Inverse CDF of Exp(rate); u in (0, 1] so the log is finite.
        let u = (Double(rng.next() >> 11) + 1) / 9_007_199_254_740_992.0
        return -Foundation.log(u) / rate * 1e9
    }
}

/// A small, fast, seedable PRNG (SplitMix64), so open-loop runs are reproducible.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
