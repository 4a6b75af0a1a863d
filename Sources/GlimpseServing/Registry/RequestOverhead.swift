/// The CPU time a request costs outside the engine (reading and parsing it, decoding its image,
/// routing, writing the answer), estimated from the process's CPU clock over windows of at least
/// `windowNanos`: (process CPU − engine CPU) / requests, smoothed.
///
/// The load split needs it because every request costs this much of the same cores, whichever variant
/// serves it: a variant whose batches take e nanoseconds of CPU per item serves at most
/// cores / (e + overhead) items per second, end to end, with the machine to itself.
///
/// For capacities it uses the lowest recent figure (`capacityNanosPerRequest`: the least per-request
/// figure of recent windows, let rise by `recovery` per window), not the mean. Part of the "overhead"
/// is time, not requests (threads waking and sleeping, timers, the engine's own scheduling), so it
/// weighs most per request when few requests come, and when a slow variant serves them: measured
/// on 2 cores, 155–200 µs per request while only cifar10-small served at its capacity, 390–500 µs
/// while only cifar10-large did, 265–325 µs with the two split. A variant's capacity is what it
/// reaches with the cores full of its own requests, where that share is least; with the mean, the
/// light variant's capacity read 27–30% under what it reached alone.
///
/// It also estimates the cores the process gets when it wants them all: in a window where the batch
/// workers were running batches on at least `saturation` × cores threads on average (the process had
/// more work than cores), the process's CPU rate is what the machine gave it. On a machine to itself
/// that is every core; on one shared with other work, less. Windows with less demand say nothing
/// about it, and the estimate drifts back toward every core (other work may have stopped). Pure:
/// the caller passes the clocks and counts.
public struct RequestOverhead: Sendable {
    public var windowNanos: UInt64
    /// Fewest requests in a window for it to update the overhead estimate.
    public var minRequests: Int
    /// Weight of a new window's figure in the estimates.
    public var weight: Double
    /// Cores of the machine.
    public var cores: Double
    /// Share of the cores that batch workers must keep busy for a window to count as saturated.
    public var saturation: Double
    /// Non-engine CPU nanoseconds per request; nil until a window has been measured.
    public private(set) var cpuNanosPerRequest: Double?
    /// The lowest recent window's non-engine CPU nanoseconds per request (nil until measured).
    public private(set) var capacityNanosPerRequest: Double?
    /// How much `capacityNanosPerRequest` may rise per window toward a higher new figure.
    public var recovery: Double = 0.02
    /// Cores the process gets when it wants them all (at most `cores`).
    public private(set) var availableCores: Double
    /// Each variant's own figure, from windows where the process used the cores it gets.
    public private(set) var variants = VariantOverhead()
    /// Share of `availableCores` the process must use in a window for it to count as busy.
    public var busyShare: Double = 0.85
    private var start: (now: UInt64, process: UInt64, engine: UInt64, busy: UInt64, requests: Int, byVariant: [String: Int])?

    public init(cores: Double, windowNanos: UInt64 = 1_000_000_000, minRequests: Int = 50, weight: Double = 0.5,
                saturation: Double = 0.9) {
        self.cores = max(1, cores)
        self.availableCores = max(1, cores)
        self.saturation = saturation
        self.windowNanos = windowNanos
        self.minRequests = minRequests
        self.weight = weight
    }

    /// Whether a window has passed since it started (so the caller reads the clocks only then).
    public func isDue(now: UInt64) -> Bool {
        guard let start else { return true }
        return now &- start.now >= windowNanos
    }

    /// Closes the window at `now` with the process's and the engines' CPU clocks, the batch workers'
    /// busy time (wall nanoseconds spent running batches, summed over workers) and the requests
    /// counted so far, in all and by the variant that served them (all monotonic totals), and starts
    /// the next.
    public mutating func observe(now: UInt64, processCPU: UInt64, engineCPU: UInt64, engineBusy: UInt64 = 0, requests: Int,
                                 requestsByVariant: [String: Int] = [:]) {
        defer { start = (now, processCPU, engineCPU, engineBusy, requests, requestsByVariant) }
        guard let start, now > start.now, processCPU >= start.process else { return }
        let window = Double(now - start.now)
        let process = Double(processCPU - start.process)
        let busy = engineBusy >= start.busy ? Double(engineBusy - start.busy) : 0
        if busy >= saturation * cores * window {
            let got = min(cores, max(0.05 * cores, process / window))
            availableCores += weight * (got - availableCores)
        } else {
            availableCores += 0.1 * weight * (cores - availableCores)
        }
        guard requests - start.requests >= minRequests else { return }
        let engine = engineCPU >= start.engine ? Double(engineCPU - start.engine) : 0
        let perRequest = max(0, process - engine) / Double(requests - start.requests)
        cpuNanosPerRequest = cpuNanosPerRequest.map { $0 + weight * (perRequest - $0) } ?? perRequest
        capacityNanosPerRequest = capacityNanosPerRequest.map { min($0 * (1 + recovery), perRequest) } ?? perRequest
        if process >= busyShare * availableCores * window {
            var served: [String: Int] = [:]
            for (name, count) in requestsByVariant { served[name] = count - (start.byVariant[name] ?? 0) }
            variants.observe(nonEngineNanos: max(0, process - engine), requests: served, prior: capacityNanosPerRequest ?? perRequest)
        }
    }

    /// Forgets the per-variant figures of variants no longer loaded.
    public mutating func keepVariants(only loaded: Set<String>) {
        variants.keep(only: loaded)
        if let s = start { start?.byVariant = s.byVariant.filter { loaded.contains($0.key) } }
    }

    /// Items per second a variant serves with the cores the process gets to itself, from its engine
    /// CPU per item, and its own figure outside the engine when windows have told it apart from the
    /// other variants' (else the lowest recent figure of all requests).
    public func capacity(engineCPUNanosPerItem e: Double, variant: String? = nil) -> Double? {
        guard e > 0 else { return nil }
        let outside = variant.flatMap { variants.overhead(of: $0) } ?? capacityNanosPerRequest ?? 0
        return availableCores * 1e9 / (e + outside)
    }
}
