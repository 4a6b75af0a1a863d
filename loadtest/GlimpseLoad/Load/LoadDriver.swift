import Foundation

/// Generates load on one connection, on that connection's loop thread. Closed loop keeps a fixed
/// number of requests in flight; open loop sends on an `ArrivalSchedule` and measures latency from
/// each request's intended send time, so a slow server cannot hide its stalls (no coordinated omission).
final class LoadDriver: H2LoopDriver {
    enum Pacing {
        case closed(inFlight: Int)
        case open(ArrivalSchedule, maxOutstanding: Int)
    }

    private(set) var phase: RunPhase
    private var pacing: Pacing
    private let corpus: RequestCorpus
    private(set) var recorder = LoadRecorder()
    let progress: ProgressCounter
    private var outstanding = 0
    private var sendIndex: Int

    init(phase: RunPhase, pacing: Pacing, corpus: RequestCorpus, progress: ProgressCounter, firstIndex: Int) {
        self.phase = phase
        self.pacing = pacing
        self.corpus = corpus
        self.progress = progress
        self.sendIndex = firstIndex
    }

    func tick(_ connection: H2Connection, now: UInt64) -> UInt64? {
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
                    if measured { recorder.recordDropped(reason: "client_backlog") }
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
        let request = corpus.request(sendIndex, authority: connection.authority)
        sendIndex &+= 1
        outstanding += 1
        if measured { recorder.started += 1 }
        let start = phase.measureStartNs
        connection.submitOnLoop(request, submitted: intended) { [self] result, timing in
            outstanding -= 1
            guard measured else { return }
            let before = recorder.succeeded
            recorder.record(result, intendedNs: intended, timing: timing, measureStartNs: start)
            progress.add(success: recorder.succeeded > before)
        }
    }
}

/// Counts completions across connection threads for the live progress line.
public final class ProgressCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var completed = 0
    private var failed = 0

    public init() {}

    func add(success: Bool) {
        lock.lock()
        completed += 1
        if !success { failed += 1 }
        lock.unlock()
    }

    /// (completed, failed) so far.
    public var snapshot: (completed: Int, failed: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (completed, failed)
    }
}
