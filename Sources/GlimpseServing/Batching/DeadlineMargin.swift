import Foundation

/// A feedback factor on a queue's predicted completion times, so that the share of admitted requests
/// that miss their deadline stays near `targetMissShare` whatever the latency model leaves out.
///
/// Predictions count the queue and the engine's batch times; they do not count the CPU that the rest
/// of the process takes from the workers under overload (parsing and refusing the requests that are
/// turned away, decoding, other variants' queues). When they run short, admitted requests expire in
/// the queue. Each expiry raises the factor by `step`; each request dispatched in time lowers it by
/// the amount that balances the two at the target share, so it settles where about that share of
/// requests is missed, and goes back to 1 while nothing is missed.
public struct DeadlineMargin: Sendable, Hashable {
    /// The share of admitted requests with a deadline that may expire in the queue.
    public let targetMissShare: Double
    /// Factor applied per missed request (×) and its log, spread over the hits that balance it.
    public let step: Double
    public let ceiling: Double
    public private(set) var factor: Double = 1
    private let logStep: Double
    private let logDecayPerHit: Double

    public init(targetMissShare: Double = 0.004, step: Double = 1.05, ceiling: Double = 4) {
        self.targetMissShare = min(0.5, max(1e-6, targetMissShare))
        self.step = max(1.0001, step)
        self.ceiling = max(1, ceiling)
        logStep = log(self.step)
        logDecayPerHit = logStep * self.targetMissShare / (1 - self.targetMissShare)
    }

    /// `misses` requests expired in the queue (deadline passed or predicted to pass).
    public mutating func observe(misses: Int) {
        guard misses > 0 else { return }
        factor = min(ceiling, factor * exp(logStep * Double(misses)))
    }

    /// `hits` requests with a deadline went to the engine predicted to finish in time.
    public mutating func observe(hits: Int) {
        guard hits > 0, factor > 1 else { return }
        factor = max(1, factor * exp(-logDecayPerHit * Double(hits)))
    }
}
