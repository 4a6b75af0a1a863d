/// The CPU time a request costs outside the engine (reading and parsing it, decoding its image,
/// routing, writing the answer), estimated from the process's CPU clock over windows of at least
/// `windowNanos`: (process CPU − engine CPU) / requests, smoothed.
///
/// The load split needs it because every request costs this much of the same cores, whichever variant
/// serves it: a variant whose batches take e nanoseconds of CPU per item serves at most
/// cores / (e + overhead) items per second, end to end, with the machine to itself. Pure: the caller
/// passes the clocks and counts.
public struct RequestOverhead: Sendable {
    public var windowNanos: UInt64
    /// Fewest requests in a window for it to update the overhead estimate.
    public var minRequests: Int
    /// Weight of a new window's figure in the estimates.
    public var weight: Double
    /// Cores of the machine.
    public var cores: Double
    /// Non-engine CPU nanoseconds per request; nil until a window has been measured.
    public private(set) var cpuNanosPerRequest: Double?
    private var start: (now: UInt64, process: UInt64, engine: UInt64, requests: Int)?

    public init(cores: Double, windowNanos: UInt64 = 1_000_000_000, minRequests: Int = 50, weight: Double = 0.5) {
        self.cores = max(1, cores)
        self.windowNanos = windowNanos
        self.minRequests = minRequests
        self.weight = weight
    }

    /// Whether a window has passed since it started (so the caller reads the clocks only then).
    public func isDue(now: UInt64) -> Bool {
        guard let start else { return true }
        return now &- start.now >= windowNanos
    }

    /// Closes the window at `now` with the process's and the engines' CPU clocks and the requests
    /// counted so far (all monotonic totals), and starts the next.
    public mutating func observe(now: UInt64, processCPU: UInt64, engineCPU: UInt64, requests: Int) {
        defer { start = (now, processCPU, engineCPU, requests) }
        guard let start, now > start.now, processCPU >= start.process, requests - start.requests >= minRequests else { return }
        let process = Double(processCPU - start.process)
        let engine = engineCPU >= start.engine ? Double(engineCPU - start.engine) : 0
        let perRequest = max(0, process - engine) / Double(requests - start.requests)
        cpuNanosPerRequest = cpuNanosPerRequest.map { $0 + weight * (perRequest - $0) } ?? perRequest
    }

    /// Items per second a variant serves with the cores to itself, from its engine CPU per item.
    public func capacity(engineCPUNanosPerItem e: Double) -> Double? {
        guard e > 0 else { return nil }
        return cores * 1e9 / (e + (cpuNanosPerRequest ?? 0))
    }
}
