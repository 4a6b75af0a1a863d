import Foundation

/// Arrivals per second, exponentially smoothed over time (not over events): each arrival adds 1/τ and
/// the estimate decays as e^(−Δt/τ), so it follows a step in the load within a few τ and falls back
/// when arrivals stop. Pure: the caller passes the clock (monotonic nanoseconds).
public struct ArrivalRate: Sendable, Equatable {
    /// Time constant, nanoseconds.
    public let tauNanos: Double
    private var value = 0.0
    private var last: UInt64?

    public init(tauSeconds: Double = 1) {
        tauNanos = max(1e6, tauSeconds * 1e9)
    }

    /// Records `count` arrivals at `now`.
    public mutating func observe(count: Int = 1, now: UInt64) {
        value = rate(at: now) + Double(max(0, count)) * 1e9 / tauNanos
        last = max(last ?? now, now)
    }

    /// The estimate at `now`, in arrivals per second.
    public func rate(at now: UInt64) -> Double {
        guard let last, now > last else { return value }
        return value * exp(-Double(now - last) / tauNanos)
    }
}
