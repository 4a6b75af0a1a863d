import Foundation

/// Generates load on one connection, on that connection's loop thread. Closed loop keeps a fixed
/// number of requests in flight; open loop sends on an `ArrivalSchedule` and measures latency from
/// each request's intended send time, so a slow server cannot hide its stalls (no coordinated omission).
final class LoadDriver: H2LoopDriver, H2StreamSink {
    enum Pacing {
        case closed(inFlight: Int)
        case open(ArrivalSchedule, maxOutstanding: Int)
    }

    @exclusivity(unchecked) private(set) var phase: RunPhase
    @exclusivity(unchecked) private var pacing: Pacing
    private let corpus: RequestCorpus
    /// Where this driver records; shared by the drivers of one loop thread (so no merge between them).
    let results: SharedRecorder
    let progress: ProgressCounter
    @exclusivity(unchecked) private var outstanding = 0
    @exclusivity(unchecked) private var sendIndex: Int
    /// The corpus' requests as sent: header block encoded once, body shared (built on the first send).
    private var requests: [(block: H2HeaderBlock, body: [UInt8]?)] = []
    /// Completions not yet added to `progress` (published once per loop turn, not per response).
    @exclusivity(unchecked) private var pendingCompleted = 0
    @exclusivity(unchecked) private var pendingFailed = 0

    init(phase: RunPhase, pacing: Pacing, corpus: RequestCorpus, progress: ProgressCounter, firstIndex: Int,
         results: SharedRecorder = SharedRecorder()) {
        self.results = results
        self.phase = phase
        self.pacing = pacing
        self.corpus = corpus
        self.progress = progress
        self.sendIndex = firstIndex
    }

    func tick(_ connection: H2Connection, now: UInt64) -> UInt64? {
        publishProgress()
        let state = phase.advance(now: now, inFlight: outstanding)
        if state == .done {
            connection.stop()
            return nil
        }
        var wake: UInt64? = state == .warmup ? phase.measureStartNs : (state == .measuring ? phase.measureEndNs : phase.measureEndNs &+ phase.drainNs)
        switch pacing {
        case .closed(let target):
            while outstanding < target, let measured = phase.admit(intendedNs: now) {
                send(on: connection, intended: now, measured: measured)
            }
        case .open(var schedule, let maxOutstanding):
            var sentThisTick = 0
            while phase.startNs &+ schedule.peek <= now, sentThisTick < 10_000 {
                let intended = phase.startNs &+ schedule.next()
                guard let measured = phase.admit(intendedNs: intended) else { break }
                sentThisTick += 1
                if outstanding >= maxOutstanding {
                    if measured { results.recorder.recordDropped(reason: "client_backlog", intendedNs: intended, measureStartNs: phase.measureStartNs) }
                    continue
                }
                send(on: connection, intended: intended, measured: measured)
            }
            pacing = .open(schedule, maxOutstanding: maxOutstanding)
            if state == .warmup || state == .measuring {
                wake = min(wake ?? .max, phase.startNs &+ schedule.peek)
            }
        }
        return wake
    }

    private func send(on connection: H2Connection, intended: UInt64, measured: Bool) {
        if requests.isEmpty {
            // Borrowed blocks (nghttp2 reads our bytes instead of copying them per request): this driver
            // outlives every serialization on its connection (released when the connection's loop ends).
            requests = (0..<max(corpus.bodies.count, 1)).map { i in
                let request = corpus.request(i, authority: connection.authority, scheme: connection.scheme)
                return (H2HeaderBlock(request.headerList, borrowed: true), request.body)
            }
        }
        let index = sendIndex % requests.count
        let request = requests[index]
        sendIndex &+= 1
        outstanding += 1
        if measured { results.recorder.started += 1 }
        // `submitted` is the intended send time; the tag says which body went (for its expected labels).
        connection.submitOnLoop(block: request.block, body: request.body, submitted: intended, tag: UInt64(index), flag: measured)
    }

    /// A completion of a request sent by `send` (`timing.submitted`: its intended time; `tag`: its body's
    /// index in the corpus; `flag`: whether it is measured).
    func streamFinished(_ state: H2StreamState, timing: H2Timing) {
        outstanding -= 1
        if state.flag {
            let before = results.recorder.succeeded
            if let failure = state.failure {
                results.recorder.record(.failure(failure), intendedNs: timing.submitted, timing: timing, measureStartNs: phase.measureStartNs)
            } else {
                results.recorder.recordResponse(status: state.status, body: state.body, intendedNs: timing.submitted, timing: timing,
                                                measureStartNs: phase.measureStartNs, bodyIndex: Int(state.tag))
            }
            pendingCompleted += 1
            if results.recorder.succeeded == before { pendingFailed += 1 }
        }
        if outstanding == 0 { publishProgress() }
    }

    private func publishProgress() {
        guard pendingCompleted > 0 else { return }
        progress.add(completed: pendingCompleted, failed: pendingFailed)
        pendingCompleted = 0
        pendingFailed = 0
    }
}

/// The recorder of the connections one loop thread runs (used only on that thread until the run ends).
final class SharedRecorder {
    @exclusivity(unchecked) var recorder = LoadRecorder()
}

/// Counts completions across connection threads for the live progress line.
public final class ProgressCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var completed = 0
    private var failed = 0

    public init() {}

    func add(success: Bool) {
        add(completed: 1, failed: success ? 0 : 1)
    }

    func add(completed: Int, failed: Int) {
        lock.lock()
        self.completed += completed
        self.failed += failed
        lock.unlock()
    }

    /// (completed, failed) so far.
    public var snapshot: (completed: Int, failed: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (completed, failed)
    }
}
