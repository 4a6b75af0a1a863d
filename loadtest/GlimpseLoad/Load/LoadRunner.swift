import Foundation

/// Runs one configuration: opens the connections, gives each a driver on its own thread, waits
/// (bounded) for all of them, then merges their recorders into a `RunResult`.
public enum LoadRunner {
    /// Called about four times a second from the calling thread while a run is in progress.
    public typealias ProgressHandler = (_ elapsed: Double, _ completed: Int, _ failed: Int) -> Void

    public static func run(_ config: LoadConfiguration, corpus: RequestCorpus, progress: ProgressHandler? = nil) throws -> RunResult {
        try config.validate()
        let tls = try config.tls.map { try TLSContext($0) }  // one trust store for all connections
        var connections: [H2Connection] = []
        for _ in 0..<config.connections {
            let connection = try H2Connection(host: config.host, port: config.port, requestTimeout: config.requestTimeout, tls: tls)
            connection.collectsResponseHeaders = false  // the recorder reads status and body only
            connections.append(connection)
        }
        let counter = ProgressCounter()
        let prepared = corpus.prepared(for: connections.first?.authority ?? "", scheme: connections.first?.scheme ?? "http")
        let start = MonotonicClock.now()
        let drain = config.requestTimeout + 1
        var drivers: [LoadDriver] = []
        // Connections share `threads` loop threads (connection i on thread i % threads); the drivers of one
        // thread share one recorder.
        let threads = min(config.threads, connections.count)
        let recorders = (0..<threads).map { _ in SharedRecorder() }
        if let slo = config.sloMs {
            for shared in recorders { shared.recorder.sloMicros = UInt64((slo * 1000).rounded()) }
        }
        for shared in recorders { shared.recorder.expectedLabels = corpus.expectedLabels }
        for i in connections.indices {
            let share = config.maxRequests / config.connections + (i < config.maxRequests % config.connections ? 1 : 0)
            let phase = RunPhase(startNs: start, warmup: config.warmup, duration: config.duration,
                                 maxRequests: max(share, 0), drainTimeout: drain)
            let pacing: LoadDriver.Pacing
            if let schedule = config.arrivalSchedule(ofConnection: i) {
                pacing = .open(schedule, maxOutstanding: config.maxOutstandingPerConnection)
            } else {
                pacing = .closed(inFlight: config.concurrency(ofConnection: i))
            }
            let driver = LoadDriver(phase: phase, pacing: pacing, corpus: prepared, progress: counter, firstIndex: i * 7,
                                    results: recorders[i % threads])
            drivers.append(driver)
        }
        for t in 0..<threads {
            let mine = Array(stride(from: t, to: connections.count, by: threads))
            H2Connection.start(mine.map { connections[$0] }, drivers: mine.map { drivers[$0] }, sinks: mine.map { drivers[$0] },
                               name: "glimpse-load-\(t)")
        }
        // Bounded wait: warm-up + duration + drain + slack.
        let limit = config.warmup + config.duration + drain + 5
        var allDone = false
        while !allDone {
            let elapsed = Double(MonotonicClock.now() - start) / 1e9
            if elapsed > limit { break }
            allDone = connections.allSatisfy { $0.join(timeout: 0) }
            if !allDone {
                let snap = counter.snapshot
                progress?(max(elapsed - config.warmup, 0), snap.completed, snap.failed)
                Thread.sleep(forTimeInterval: 0.25)
            }
        }
        for connection in connections { connection.stop() }
        for connection in connections { _ = connection.join(timeout: 5) }
        // The first thread's recorder is the start of the merge (the same as merging it into an empty one,
        // without building and walking more empty histograms).
        var merged = recorders.first?.recorder ?? LoadRecorder()
        for shared in recorders.dropFirst() { merged.merge(shared.recorder) }
        var notes: [String] = []
        for (i, connection) in connections.enumerated() {
            if let reason = connection.closeReason, reason.detail != "client stopped" {
                notes.append("connection \(i) ended early: \(reason.detail)")
            }
        }
        let phase = drivers.first?.phase ?? RunPhase(startNs: start, warmup: config.warmup, duration: config.duration, maxRequests: 1, drainTimeout: 0)
        var result = RunResult(mode: config.mode, connections: config.connections, recorder: merged,
                               measureStartNs: phase.measureStartNs, measureEndNs: phase.measureEndNs)
        result.notes = notes
        if !config.rateSteps.isEmpty {
            result.rateSteps = config.rateSteps
            result.mode += " then " + config.rateSteps.map(\.label).joined(separator: ", ")
        }
        return result
    }

    /// Runs each mode in turn with the same settings (a sweep over concurrencies or rates).
    public static func sweep(_ config: LoadConfiguration, modes: [LoadMode], corpus: RequestCorpus,
                             progress: ((Int, Double, Int, Int) -> Void)? = nil) throws -> [RunResult] {
        var results: [RunResult] = []
        for (i, mode) in modes.enumerated() {
            var c = config
            c.mode = mode
            results.append(try run(c, corpus: corpus) { elapsed, done, failed in progress?(i, elapsed, done, failed) })
        }
        return results
    }
}
