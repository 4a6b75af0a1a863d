/// How requests are paced.
public enum LoadMode: Equatable, Sendable {
    /// A fixed number of requests in flight in total, spread over the connections.
    case closed(concurrency: Int)
    /// Requests sent at a constant rate (req/s), latency measured from each intended send time.
    case constantRate(Double)
    /// Poisson arrivals at a mean rate (req/s), latency measured from each intended send time.
    case poisson(Double)

    public var label: String {
        switch self {
        case .closed(let c): return "closed c=\(c)"
        case .constantRate(let r): return "constant \(Self.format(r))/s"
        case .poisson(let r): return "poisson \(Self.format(r))/s"
        }
    }

    private static func format(_ r: Double) -> String {
        r == r.rounded() ? String(Int(r)) : String(r)
    }
}

/// A change of the offered rate during an open-loop run (a step load).
public struct RateStep: Sendable, Equatable, Codable {
    /// Seconds after the start of the measured period.
    public var atSeconds: Double
    /// Total requests per second from then on.
    public var rate: Double

    public init(atSeconds: Double, rate: Double) {
        self.atSeconds = atSeconds
        self.rate = rate
    }

    /// Parses "RATE@SECONDS[,RATE@SECONDS...]", e.g. "300@20,900@40".
    public static func parseList(_ text: String) throws -> [RateStep] {
        try text.split(separator: ",").map { part in
            let pieces = part.split(separator: "@", omittingEmptySubsequences: false)
            guard pieces.count == 2, let rate = Double(pieces[0].trimmingCharacters(in: .whitespaces)),
                  let at = Double(pieces[1].trimmingCharacters(in: .whitespaces)) else {
                throw LoadConfigError("a rate step is RATE@SECONDS (e.g. 300@20), got \(part)")
            }
            return RateStep(atSeconds: at, rate: rate)
        }
    }

    var label: String {
        func f(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(v) }
        return "\(f(rate))/s@\(f(atSeconds))s"
    }
}

/// A validated description of one run (one point of a sweep).
public struct LoadConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var connections: Int
    /// Event-loop threads the connections share (connection i runs on thread i % threads). One thread
    /// serving several connections wakes up less often than a thread per connection (h2load's model).
    public var threads: Int
    public var mode: LoadMode
    /// Measured duration, seconds (after warm-up).
    public var duration: Double
    /// Warm-up, seconds; requests completing before it ends are not counted.
    public var warmup: Double
    /// Maximum measured requests; the run ends at whichever of duration or count comes first.
    public var maxRequests: Int
    public var requestTimeout: Double
    /// Open loop only: requests queued or in flight per connection beyond which new arrivals are dropped
    /// (and counted as `client_backlog` errors, with their latency still recorded to the timeout).
    public var maxOutstandingPerConnection: Int
    public var seed: UInt64
    /// h2 over TLS with these options; nil: h2c.
    public var tls: TLSOptions?
    /// Open loop only: changes of the rate during the measured period (the mode's rate holds before
    /// the first step, and during warm-up).
    public var rateSteps: [RateStep] = []
    /// Latency objective in ms (usually the calls' `deadline_ms`): successes answered within it, from
    /// the intended send time, are counted against every request offered. nil: not counted.
    public var sloMs: Double?

    public init(host: String = "127.0.0.1", port: Int = 8080, connections: Int = 1, mode: LoadMode = .closed(concurrency: 1),
                duration: Double = 10, warmup: Double = 1, maxRequests: Int = 1_000_000, requestTimeout: Double = 30,
                maxOutstandingPerConnection: Int = 10_000, seed: UInt64 = 1, threads: Int = 1, tls: TLSOptions? = nil) {
        self.host = host
        self.port = port
        self.connections = connections
        self.threads = threads
        self.mode = mode
        self.duration = duration
        self.warmup = warmup
        self.maxRequests = maxRequests
        self.requestTimeout = requestTimeout
        self.maxOutstandingPerConnection = maxOutstandingPerConnection
        self.seed = seed
        self.tls = tls
    }

    /// Checks every bound; the CLI and library callers go through this.
    public func validate() throws {
        func fail(_ text: String) -> LoadConfigError { LoadConfigError(text) }
        guard !host.isEmpty else { throw fail("host must not be empty") }
        guard (1...65535).contains(port) else { throw fail("port must be in 1...65535, got \(port)") }
        guard (1...1024).contains(connections) else { throw fail("connections must be in 1...1024, got \(connections)") }
        guard (1...1024).contains(threads) else { throw fail("threads must be in 1...1024, got \(threads)") }
        guard duration.isFinite, duration > 0, duration <= 86_400 else { throw fail("duration must be in (0, 86400] s, got \(duration)") }
        guard warmup.isFinite, warmup >= 0, warmup <= 3600 else { throw fail("warm-up must be in [0, 3600] s, got \(warmup)") }
        guard maxRequests >= 1 else { throw fail("max requests must be at least 1, got \(maxRequests)") }
        guard requestTimeout.isFinite, requestTimeout > 0, requestTimeout <= 3600 else {
            throw fail("request timeout must be in (0, 3600] s, got \(requestTimeout)")
        }
        guard maxOutstandingPerConnection >= 1 else { throw fail("max outstanding must be at least 1") }
        if let file = tls?.caFile, file.isEmpty { throw fail("the CA file name must not be empty") }
        switch mode {
        case .closed(let c):
            guard (1...100_000).contains(c) else { throw fail("concurrency must be in 1...100000, got \(c)") }
            guard c >= connections else { throw fail("concurrency (\(c)) must be at least the number of connections (\(connections))") }
        case .constantRate(let r), .poisson(let r):
            guard r.isFinite, r > 0, r <= 10_000_000 else { throw fail("rate must be in (0, 1e7] req/s, got \(r)") }
        }
        if !rateSteps.isEmpty {
            if case .closed = mode { throw fail("rate steps apply to an open loop (--rate)") }
            var last = 0.0
            for step in rateSteps {
                guard step.rate.isFinite, step.rate > 0, step.rate <= 10_000_000 else { throw fail("rate must be in (0, 1e7] req/s, got \(step.rate)") }
                guard step.atSeconds.isFinite, step.atSeconds > last, step.atSeconds < duration else {
                    throw fail("rate step times must increase and fall inside the duration (0, \(duration)) s, got \(step.atSeconds)")
                }
                last = step.atSeconds
            }
        }
        if let sloMs { guard sloMs.isFinite, sloMs > 0, sloMs <= 3_600_000 else { throw fail("the SLO must be in (0, 3600000] ms, got \(sloMs)") } }
    }

    /// The arrival schedule of connection `index` in open-loop mode (nil in closed-loop mode): the
    /// total rate split over the connections, steps included.
    public func arrivalSchedule(ofConnection index: Int) -> ArrivalSchedule? {
        let n = Double(connections)
        let steps = rateSteps.map { ArrivalSchedule.Step(atNs: (warmup + $0.atSeconds) * 1e9, rate: $0.rate / n) }
        switch mode {
        case .closed:
            return nil
        case .constantRate(let rate):
            return ArrivalSchedule(kind: .constant, rate: rate / n, offsetNs: Double(index) * 1e9 / rate, steps: steps)
        case .poisson(let rate):
            return ArrivalSchedule(kind: .poisson, rate: rate / n, seed: seed &+ UInt64(index) &* 7919, steps: steps)
        }
    }

    /// The in-flight target of connection `index` in closed-loop mode (the total spread evenly).
    public func concurrency(ofConnection index: Int) -> Int {
        guard case .closed(let c) = mode else { return 0 }
        return c / connections + (index < c % connections ? 1 : 0)
    }
}

/// A bad option or bound, with a message for the user.
public struct LoadConfigError: Error, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
