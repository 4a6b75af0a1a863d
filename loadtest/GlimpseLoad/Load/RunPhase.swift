/// The phases of a run as a pure state machine over time and counts: warm-up (not recorded),
/// measuring, draining (no new requests; wait for in-flight ones), done. Bounded by duration AND
/// by the maximum number of measured requests, whichever comes first.
public struct RunPhase: Sendable, Equatable {
    public enum State: Sendable, Equatable { case warmup, measuring, draining, done }

    public let startNs: UInt64
    public let warmupNs: UInt64
    public let durationNs: UInt64
    public let drainNs: UInt64
    public let maxRequests: Int
    public private(set) var state: State = .warmup
    /// Requests started whose results will be measured (counted at send time).
    public private(set) var measuredStarted = 0

    public init(startNs: UInt64, warmup: Double, duration: Double, maxRequests: Int, drainTimeout: Double) {
        self.startNs = startNs
        self.warmupNs = UInt64(warmup * 1e9)
        self.durationNs = UInt64(duration * 1e9)
        self.drainNs = UInt64(drainTimeout * 1e9)
        self.maxRequests = maxRequests
    }

    public var measureStartNs: UInt64 { startNs &+ warmupNs }
    public var measureEndNs: UInt64 { measureStartNs &+ durationNs }

    /// Advances with the clock and the in-flight count; returns the new state.
    @discardableResult
    public mutating func advance(now: UInt64, inFlight: Int) -> State {
        if state == .warmup && now >= measureStartNs { state = .measuring }
        if state == .measuring && (now >= measureEndNs || measuredStarted >= maxRequests) { state = .draining }
        if state == .draining && (inFlight == 0 || now >= measureEndNs &+ drainNs) { state = .done }
        return state
    }

    /// Whether a request intended at `intendedNs` may start now; counts it if it is measured.
    /// Returns nil when no more requests may start, else whether the request is measured.
    public mutating func admit(intendedNs: UInt64) -> Bool? {
        switch state {
        case .warmup:
            return false
        case .measuring:
            guard measuredStarted < maxRequests, intendedNs < measureEndNs else { return nil }
            measuredStarted += 1
            return true
        case .draining, .done:
            return nil
        }
    }
}
