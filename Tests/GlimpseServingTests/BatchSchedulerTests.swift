import GlimpseServing
import XCTest

/// The batching policy, driven with a fake clock: no threads, sockets or sleeps.
final class BatchSchedulerTests: XCTestCase {
    let ms: UInt64 = 1_000_000

    func fixed(maxBatch: Int = 4, delayMs: UInt64 = 2, queue: Int = 16, allowed: [Int]? = nil) -> BatchScheduler {
        BatchScheduler(configuration: .init(maxBatchSize: maxBatch, maxQueueDelayNanos: delayMs * ms, maxQueueLength: queue,
                                            allowedBatchSizes: allowed, delayPolicy: .fixed))
    }

    func testWaitsForMaxQueueDelayThenDispatchesWhatIsThere() {
        var s = fixed()
        XCTAssertEqual(s.enqueue(id: 1, now: 0), .accepted)
        XCTAssertEqual(s.next(now: 0), .waitUntil(2 * ms))
        XCTAssertEqual(s.enqueue(id: 2, now: 1 * ms), .accepted)
        XCTAssertEqual(s.next(now: 1 * ms), .waitUntil(2 * ms))
        XCTAssertEqual(s.next(now: 2 * ms), .dispatch(ids: [1, 2]))
        // The only worker is busy: nothing more until it is done.
        XCTAssertEqual(s.enqueue(id: 3, now: 3 * ms), .accepted)
        XCTAssertEqual(s.next(now: 10 * ms), .idle)
        s.batchDone(size: 2, durationNanos: 8 * ms, now: 10 * ms)
        XCTAssertEqual(s.next(now: 10 * ms), .dispatch(ids: [3]))
    }

    func testFullBatchGoesAtOnce() {
        var s = fixed(maxBatch: 3)
        for id in 1...4 { XCTAssertEqual(s.enqueue(id: UInt64(id), now: 0), .accepted) }
        XCTAssertEqual(s.next(now: 0), .dispatch(ids: [1, 2, 3]))
    }

    func testAllowedBatchSizesCutTheBatch() {
        var s = fixed(maxBatch: 8, allowed: [1, 4, 8])
        for id in 1...6 { _ = s.enqueue(id: UInt64(id), now: 0) }
        XCTAssertEqual(s.next(now: 2 * ms), .dispatch(ids: [1, 2, 3, 4]))
    }

    func testQueueFullIsRefusedWithRetryHint() {
        var s = fixed(queue: 2)
        XCTAssertEqual(s.enqueue(id: 1, now: 0), .accepted)
        XCTAssertEqual(s.enqueue(id: 2, now: 0), .accepted)
        guard case .rejected(let reason, let retry) = s.enqueue(id: 3, now: 0) else { return XCTFail("expected a refusal") }
        XCTAssertEqual(reason, .queueFull)
        XCTAssertGreaterThan(retry, 0)
    }

    func testAdaptiveDispatchesAtOnceWhenArrivalsAreSparse() {
        var s = BatchScheduler(configuration: .init(maxBatchSize: 4, maxQueueDelayNanos: 2 * ms, delayPolicy: .adaptive))
        _ = s.enqueue(id: 1, now: 0)
        XCTAssertEqual(s.next(now: 0), .dispatch(ids: [1]))
        s.batchDone(size: 1, durationNanos: ms, now: ms)
        _ = s.enqueue(id: 2, now: 100 * ms)  // 100 ms after the last one: no point waiting
        XCTAssertEqual(s.next(now: 100 * ms), .dispatch(ids: [2]))
    }

    func testAdaptiveWaitsWhenArrivalsAreDense() {
        var s = BatchScheduler(configuration: .init(maxBatchSize: 4, maxQueueDelayNanos: 2 * ms, delayPolicy: .adaptive))
        for i in 0..<3 { _ = s.enqueue(id: UInt64(i + 1), now: UInt64(i) * ms / 4) }
        XCTAssertEqual(s.next(now: ms / 2), .waitUntil(2 * ms))
        _ = s.enqueue(id: 4, now: ms)
        XCTAssertEqual(s.next(now: ms), .dispatch(ids: [1, 2, 3, 4]))
    }

    func testUnmeetableDeadlineIsShedAtOnce() {
        var s = fixed(maxBatch: 2)
        // Teach the latency model: a batch of 2 takes 10 ms.
        _ = s.enqueue(id: 1, now: 0)
        _ = s.enqueue(id: 2, now: 0)
        XCTAssertEqual(s.next(now: 0), .dispatch(ids: [1, 2]))
        s.batchDone(size: 2, durationNanos: 10 * ms, now: 10 * ms)
        // The model predicts about 5 ms for one item: 3 ms is not enough even on an idle server.
        guard case .rejected(let reason, _) = s.enqueue(id: 3, now: 20 * ms, deadline: 23 * ms) else { return XCTFail("expected shedding") }
        XCTAssertEqual(reason, .deadlineTooShort)
        // 50 ms is.
        XCTAssertEqual(s.enqueue(id: 4, now: 20 * ms, deadline: 70 * ms), .accepted)
        // With a queue ahead, 8 ms would do for one item alone but not behind the others: that is overload.
        for id in 5...10 { XCTAssertEqual(s.enqueue(id: UInt64(id), now: 20 * ms), .accepted) }
        guard case .rejected(let queued, _) = s.enqueue(id: 11, now: 20 * ms, deadline: 28 * ms) else { return XCTFail("expected shedding") }
        XCTAssertEqual(queued, .deadlineUnmeetable)
    }

    func testDeadlinePassedInQueueExpires() {
        var s = fixed(maxBatch: 4, delayMs: 50)
        XCTAssertEqual(s.enqueue(id: 1, now: 0, deadline: 5 * ms), .accepted)
        XCTAssertEqual(s.enqueue(id: 2, now: 0), .accepted)
        // The tight deadline pulls the dispatch forward instead of waiting 50 ms.
        guard case .waitUntil(let t) = s.next(now: 0) else { return XCTFail("expected a wait") }
        XCTAssertLessThanOrEqual(t, 5 * ms)
        // If the worker was busy past the deadline, the request expires rather than running late.
        var busy = fixed(maxBatch: 1, delayMs: 0)
        _ = busy.enqueue(id: 1, now: 0)
        XCTAssertEqual(busy.next(now: 0), .dispatch(ids: [1]))
        _ = busy.enqueue(id: 2, now: ms, deadline: 3 * ms)
        XCTAssertEqual(busy.next(now: 4 * ms), .expire(ids: [2]))
    }

    func testLatencyModelFitsLine() {
        var m = LatencyModel(decay: 1)
        for n in [1, 2, 4, 8, 1, 8] { m.observe(size: n, nanos: Double(3 * n + 5) * 1e6) }
        let (a, b) = m.coefficients
        XCTAssertEqual(a / 1e6, 3, accuracy: 1e-6)
        XCTAssertEqual(b / 1e6, 5, accuracy: 1e-6)
        XCTAssertEqual(m.predict(size: 16) / 1e6, 53, accuracy: 1e-6)
    }

    func testDrainFlushesWithoutWaiting() {
        var s = fixed(delayMs: 100)
        _ = s.enqueue(id: 1, now: 0)
        XCTAssertEqual(s.next(now: 0, flush: true), .dispatch(ids: [1]))
    }
}

extension BatchSchedulerTests {
    func testPredictedWaitBeyondTheLimitIsQueueFull() {
        var s = BatchScheduler(configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, maxQueueLength: 1000,
                                                    delayPolicy: .fixed, maxPredictedWaitNanos: 50 * ms))
        _ = s.enqueue(id: 1, now: 0)
        XCTAssertEqual(s.next(now: 0), .dispatch(ids: [1]))
        s.batchDone(size: 1, durationNanos: 10 * ms, now: 10 * ms)  // 10 ms per item
        var accepted = 0
        var refused: BatchScheduler.RefusalReason?
        for id in 2...20 {
            switch s.enqueue(id: UInt64(id), now: 10 * ms) {
            case .accepted: accepted += 1
            case .rejected(let reason, _): refused = reason
            }
        }
        // About 50 ms of work fits before the predicted wait passes the limit.
        XCTAssertTrue((4...6).contains(accepted), "accepted \(accepted)")
        XCTAssertEqual(refused, .queueFull)
    }
}

/// Deadlines under load: what a request's batch will really hold, and batches that would end too late.
extension BatchSchedulerTests {
    /// One worker, batches of up to 8, t(n) = 2n + 2 ms.
    func calibrated(allowed: [Int]? = nil) -> BatchScheduler {
        var s = BatchScheduler(configuration: .init(maxBatchSize: 8, maxQueueDelayNanos: 0, allowedBatchSizes: allowed, delayPolicy: .fixed))
        s.observeCalibration(size: 1, durationNanos: 4 * ms)
        s.observeCalibration(size: 8, durationNanos: 18 * ms)
        return s
    }

    func testARequestBehindABusyWorkerIsPredictedToRunInTheBatchThatFormsMeanwhile() {
        var s = calibrated()
        // Arrivals every millisecond keep the worker busy: a batch of 8 runs from 0 to 18 ms.
        for i in 0..<8 { XCTAssertEqual(s.enqueue(id: UInt64(i), now: UInt64(i) * ms), .accepted) }
        XCTAssertEqual(s.next(now: 8 * ms), .dispatch(ids: Array(0..<8)))
        // At 8 ms the worker is busy for 18 ms more (predicted from 8 ms: until 26 ms). A request arriving
        // now waits for it, and the 18 requests arriving meanwhile at 1 per ms fill its batch: it runs in
        // a batch of 8 (18 ms), not alone (4 ms): finished at 44 ms, not 30 ms.
        XCTAssertEqual(s.predictedCompletion(now: 8 * ms, position: 0), 44 * ms)
        guard case .rejected(let reason, _) = s.enqueue(id: 100, now: 8 * ms, deadline: 40 * ms) else { return XCTFail("expected shedding") }
        XCTAssertEqual(reason, .deadlineUnmeetable)
        XCTAssertEqual(s.enqueue(id: 101, now: 8 * ms, deadline: 45 * ms), .accepted)
        // Without recent arrivals nothing is expected to join: an idle queue predicts a batch of one.
        var idle = calibrated()
        XCTAssertEqual(idle.predictedCompletion(now: 0, position: 0), 4 * ms)
        XCTAssertEqual(idle.enqueue(id: 1, now: 0, deadline: 5 * ms), .accepted)
    }

    func testABatchIsCutSoThatItsMembersFinishInTime() {
        var s = calibrated()
        // Admitted with room for a batch of one or two (t(1) = 4 ms, t(2) = 6 ms); then six more joined.
        XCTAssertEqual(s.enqueue(id: 1, now: 0, deadline: 7 * ms), .accepted)
        for id in 2...7 { XCTAssertEqual(s.enqueue(id: UInt64(id), now: 0, deadline: 100 * ms), .accepted) }
        // A batch of 7 (16 ms) would answer request 1 late: the batch is cut to 2 (6 ms).
        XCTAssertEqual(s.next(now: 0), .dispatch(ids: [1, 2]))
        // With allowed sizes, the cut takes the largest allowed size that fits.
        var a = calibrated(allowed: [1, 4, 8])
        XCTAssertEqual(a.enqueue(id: 1, now: 0, deadline: 11 * ms), .accepted)
        for id in 2...8 { XCTAssertEqual(a.enqueue(id: UInt64(id), now: 0), .accepted) }
        XCTAssertEqual(a.next(now: 0), .dispatch(ids: [1, 2, 3, 4]))
    }

    func testMembersThatCannotFinishInTimeEvenAloneExpireBeforeTheBatchForms() {
        var s = calibrated()
        XCTAssertEqual(s.enqueue(id: 1, now: 0), .accepted)
        XCTAssertEqual(s.next(now: 0), .dispatch(ids: [1]))
        // Queued behind the running batch, each with a deadline it could meet when admitted.
        XCTAssertEqual(s.enqueue(id: 2, now: 1 * ms, deadline: 12 * ms), .accepted)
        XCTAssertEqual(s.enqueue(id: 3, now: 1 * ms), .accepted)
        XCTAssertEqual(s.enqueue(id: 4, now: 1 * ms, deadline: 40 * ms), .accepted)
        // The worker comes back late, at 9 ms: request 2 would end at 13 ms even alone.
        s.batchDone(size: 1, durationNanos: 4 * ms, now: 9 * ms)
        XCTAssertEqual(s.next(now: 9 * ms), .expire(ids: [2]))
        // The batch forms without it.
        guard case .dispatch(let ids) = s.next(now: 9 * ms) else { return XCTFail("expected a batch") }
        XCTAssertEqual(ids, [3, 4])
        // An uncalibrated queue cannot predict: nothing is expired before its deadline.
        var fresh = fixed(maxBatch: 4, delayMs: 0)
        XCTAssertEqual(fresh.enqueue(id: 1, now: 0, deadline: 1), .accepted)
        XCTAssertEqual(fresh.next(now: 0), .dispatch(ids: [1]))
    }

    func testCalibrationCapsAdaptiveBatchesAtTheCheapestSizePerItem() {
        // A batch of 8 costs more per item than a batch of 1 (activations leave the cache): no batching.
        var s = BatchScheduler(configuration: .init(maxBatchSize: 8, maxQueueDelayNanos: 2 * ms, delayPolicy: .adaptive), workers: 2)
        s.adopt(calibration: [1: 6 * ms, 2: 12_400_000, 4: 25 * ms, 8: 56 * ms])
        XCTAssertEqual(s.efficientBatchSize, 1)
        XCTAssertEqual(s.batchLimit, 1)
        for id in 1...5 { XCTAssertEqual(s.enqueue(id: UInt64(id), now: 0), .accepted) }
        XCTAssertEqual(s.next(now: 0), .dispatch(ids: [1]))
        XCTAssertEqual(s.next(now: 0), .dispatch(ids: [2]))
        // The latency model was seeded from the same runs.
        XCTAssertEqual(s.latency.predict(size: 8) / 1e6, 56, accuracy: 3)
        // A model whose cost per item keeps falling batches up to the size within 5 % of the best.
        var t = BatchScheduler(configuration: .init(maxBatchSize: 8, maxQueueDelayNanos: 2 * ms, delayPolicy: .adaptive))
        t.adopt(calibration: [1: 1_000_000, 2: 1_200_000, 4: 1_600_000, 8: 3_300_000])
        XCTAssertEqual(t.efficientBatchSize, 4)
        for id in 1...6 { _ = t.enqueue(id: UInt64(id), now: 0) }
        XCTAssertEqual(t.next(now: 0), .dispatch(ids: [1, 2, 3, 4]))
        // A few per cent of noise between sizes is no reason to make requests wait for each other.
        var flat = BatchScheduler(configuration: .init(maxBatchSize: 8, maxQueueDelayNanos: 2 * ms, delayPolicy: .adaptive))
        flat.adopt(calibration: [1: 47_000, 2: 96_000, 4: 184_000, 8: 376_000])
        XCTAssertEqual(flat.efficientBatchSize, 1)
        // mnist-8 (24 µs alone, 22 an item in 8: too little gain alone) batches once the queue's own
        // work per batch counts: (24 + 4) µs alone against (88 + 4) / 4 = 23 µs an item in fours.
        var small = BatchScheduler(configuration: .init(maxBatchSize: 8, maxQueueDelayNanos: 2 * ms, delayPolicy: .adaptive))
        small.adopt(calibration: [1: 24_000, 2: 46_000, 4: 88_000, 8: 176_000])
        XCTAssertEqual(small.efficientBatchSize, 4)
        // The fixed policy keeps the configured size.
        var f = fixed(maxBatch: 8, delayMs: 0)
        f.adopt(calibration: [1: 6 * ms, 8: 56 * ms])
        XCTAssertEqual(f.batchLimit, 8)
    }

    func testALoneBatchUsesAllThreadsButBusyWorkersKeepToOneEach() {
        var s = BatchScheduler(configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, delayPolicy: .adaptive), workers: 2)
        s.adopt(calibration: [1: 6 * ms], parallelOne: 4 * ms)
        XCTAssertTrue(s.parallelHelps)
        // Light load: one request, both workers idle, nothing else waiting.
        _ = s.enqueue(id: 1, now: 0)
        XCTAssertEqual(s.next(now: 0), .dispatch(ids: [1]))
        XCTAssertTrue(s.dispatchMayUseAllThreads())
        s.batchDone(size: 1, durationNanos: 4 * ms, now: 4 * ms)
        // Load: requests wait behind the one dispatched, so it keeps to one thread...
        for id in 2...4 { _ = s.enqueue(id: UInt64(id), now: 5 * ms) }
        XCTAssertEqual(s.next(now: 5 * ms), .dispatch(ids: [2]))
        XCTAssertFalse(s.dispatchMayUseAllThreads())
        // ...and so does the second worker's batch, even when it takes the last waiting request.
        XCTAssertEqual(s.next(now: 5 * ms), .dispatch(ids: [3]))
        XCTAssertFalse(s.dispatchMayUseAllThreads())
        // Calibration that finds the threads no faster keeps every batch on one thread.
        var slow = BatchScheduler(configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, delayPolicy: .adaptive), workers: 2)
        slow.adopt(calibration: [1: 60_000], parallelOne: 58_000)
        XCTAssertFalse(slow.parallelHelps)
        _ = slow.enqueue(id: 1, now: 0)
        XCTAssertEqual(slow.next(now: 0), .dispatch(ids: [1]))
        XCTAssertFalse(slow.dispatchMayUseAllThreads())
        // Nor when the threads save too little of a lone batch's time to pay for waking them
        // (40% faster, but 40 µs).
        var small = BatchScheduler(configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, delayPolicy: .adaptive), workers: 2)
        small.adopt(calibration: [1: 100_000], parallelOne: 60_000)
        XCTAssertFalse(small.parallelHelps)
        var saves = BatchScheduler(configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, delayPolicy: .adaptive), workers: 2)
        saves.adopt(calibration: [1: 1_000_000], parallelOne: 790_000)
        XCTAssertTrue(saves.parallelHelps)
        // A single worker always may: it is the only way to use the cores.
        var one = BatchScheduler(configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, delayPolicy: .adaptive), workers: 1)
        for id in 1...3 { _ = one.enqueue(id: UInt64(id), now: 0) }
        XCTAssertEqual(one.next(now: 0), .dispatch(ids: [1]))
        XCTAssertTrue(one.dispatchMayUseAllThreads())
    }

    func testCallsThatCannotMakeItAreRefusedBeforeDecoding() {
        // 10 ms per item, one worker, no batching.
        var s = BatchScheduler(configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, delayPolicy: .adaptive), workers: 1)
        s.adopt(calibration: [1: 10 * ms])
        // Idle queue: an image ready at 2 ms finishes at 12 ms.
        XCTAssertTrue(s.admitsBeforeDecode(images: 1, incoming: 0, ready: 2 * ms, deadline: 13 * ms))
        XCTAssertFalse(s.admitsBeforeDecode(images: 1, incoming: 0, ready: 4 * ms, deadline: 13 * ms))
        // Two images still being decoded will be queued first: 30 ms.
        XCTAssertFalse(s.admitsBeforeDecode(images: 1, incoming: 2, ready: 0, deadline: 25 * ms))
        XCTAssertTrue(s.admitsBeforeDecode(images: 1, incoming: 2, ready: 0, deadline: 31 * ms))
        // A call of three images waits for its last one.
        XCTAssertFalse(s.admitsBeforeDecode(images: 3, incoming: 0, ready: 0, deadline: 25 * ms))
        // Requests already queued count too.
        _ = s.enqueue(id: 1, now: 0)
        _ = s.enqueue(id: 2, now: 0)
        XCTAssertFalse(s.admitsBeforeDecode(images: 1, incoming: 0, ready: 0, deadline: 25 * ms))
        // No prediction before calibration, none with shedding off.
        let fresh = BatchScheduler(configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0), workers: 1)
        XCTAssertTrue(fresh.admitsBeforeDecode(images: 1, incoming: 50, ready: 0, deadline: 1))
        var off = BatchScheduler(configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, shedUnmeetableDeadlines: false), workers: 1)
        off.adopt(calibration: [1: 10 * ms])
        XCTAssertTrue(off.admitsBeforeDecode(images: 1, incoming: 50, ready: 0, deadline: 1))
    }

    func testAdmissionGivesATypedReason() {
        // 10 ms per item, one worker, no batching; decoding takes 1 ms an image on one thread.
        var s = BatchScheduler(configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, delayPolicy: .adaptive), workers: 1)
        s.adopt(calibration: [1: 10 * ms])
        let decode = Double(ms)
        XCTAssertEqual(s.admit(images: 1, incoming: 0, now: 0, deadline: 12 * ms, preprocessNanos: decode, decodeAhead: 0, decodeThreads: 1), .admit)
        // Shorter than decoding and one inference on an idle server: no retry can help.
        XCTAssertEqual(s.admit(images: 1, incoming: 0, now: 0, deadline: 10 * ms, preprocessNanos: decode, decodeAhead: 0, decodeThreads: 1),
                       .refuse(reason: .deadlineTooShort, retryAfterNanos: 0))
        // Long enough alone, not behind two images still being decoded: overload, retry after one batch.
        XCTAssertEqual(s.admit(images: 1, incoming: 2, now: 0, deadline: 25 * ms, preprocessNanos: decode, decodeAhead: 0, decodeThreads: 1),
                       .refuse(reason: .deadlineUnmeetable, retryAfterNanos: 10 * ms))
        // Decode jobs ahead of it delay it too: 11 jobs on one thread leave 12 ms before it is queued.
        XCTAssertEqual(s.admit(images: 1, incoming: 0, now: 0, deadline: 21 * ms, preprocessNanos: decode, decodeAhead: 11, decodeThreads: 1),
                       .refuse(reason: .deadlineUnmeetable, retryAfterNanos: 10 * ms))
        XCTAssertEqual(s.admit(images: 1, incoming: 0, now: 0, deadline: 21 * ms, preprocessNanos: decode, decodeAhead: 11, decodeThreads: 4), .admit)
        XCTAssertEqual(BatchScheduler.RefusalReason.deadlineUnmeetable.rawValue, "deadline_unmeetable")
    }

    func testAdaptiveStopsWaitingWhenWaitsGatherNobody() {
        // One closed-loop client: a request every 0.5 ms, each sent only after the previous answer.
        var s = BatchScheduler(configuration: .init(maxBatchSize: 8, maxQueueDelayNanos: 2 * ms, delayPolicy: .adaptive))
        var now: UInt64 = 0
        var waited = 0
        for id in 1...20 {
            _ = s.enqueue(id: UInt64(id), now: now)
            var action = s.next(now: now)
            if case .waitUntil(let due) = action {
                waited += 1
                now = due
                action = s.next(now: now)
            }
            XCTAssertEqual(action, .dispatch(ids: [UInt64(id)]))
            now += 100_000
            s.batchDone(size: 1, durationNanos: 100_000, now: now)
            now += 400_000
        }
        // The first waits gather nobody; after them requests go at once.
        XCTAssertLessThanOrEqual(waited, 4)
        XCTAssertLessThan(s.waitYield, 0.5)
        // When several clients send at once again (to a model slow enough that a wait of the full
        // delay is shorter than a batch's run), a probing wait gathers them and waiting resumes.
        var probes = 0
        for round in 0..<400 {
            let base = UInt64(21 + round * 4)
            for k in 0..<4 { _ = s.enqueue(id: base + UInt64(k), now: now + UInt64(k) * 100_000) }
            now += 400_000
            var action = s.next(now: now)
            if case .waitUntil(let due) = action {
                probes += 1
                for k in 4..<8 { _ = s.enqueue(id: base + 1000 + UInt64(k), now: now + UInt64(k - 3) * 100_000) }
                now = due
                action = s.next(now: now)
            }
            guard case .dispatch(let ids) = action else { return XCTFail("expected a batch") }
            s.batchDone(size: ids.count, durationNanos: 3 * ms, now: now)
            while case .dispatch(let rest) = s.next(now: now, flush: true) { s.batchDone(size: rest.count, durationNanos: 3 * ms, now: now) }
            if probes > 0 && s.waitYield >= 0.5 { break }
        }
        XCTAssertGreaterThan(probes, 0)
        XCTAssertGreaterThanOrEqual(s.waitYield, 0.5)
    }

    /// A model whose batches run in 30 µs: even with arrivals dense enough to expect company, the
    /// oldest request never holds an idle worker longer than a batch's run, not the 2 ms delay.
    func testAdaptiveWaitsNoLongerThanABatchRuns() {
        var s = BatchScheduler(configuration: .init(maxBatchSize: 32, maxQueueDelayNanos: 2 * ms, delayPolicy: .adaptive))
        var now: UInt64 = 0
        var id: UInt64 = 0
        var longest: UInt64 = 0
        for round in 0..<300 {
            // Four requests 50 µs apart, then the worker asks what to do.
            var first: UInt64?
            for _ in 0..<4 {
                id += 1
                _ = s.enqueue(id: id, now: now)
                if first == nil { first = now }
                now += 50_000
            }
            var action = s.next(now: now)
            if case .waitUntil(let due) = action {
                if round >= 20 { longest = max(longest, due - (first ?? now)) }
                now = max(now, due)
                action = s.next(now: now)
            }
            guard case .dispatch(let ids) = action else { return XCTFail("expected a batch, got \(action)") }
            s.batchDone(size: ids.count, durationNanos: 30_000, now: now + 30_000)
            now += 30_000
            while case .dispatch(let rest) = s.next(now: now, flush: true) { s.batchDone(size: rest.count, durationNanos: 30_000, now: now) }
        }
        // Once the latency model has seen batches, waits end within about a batch's run of the oldest
        // arrival; without the cap they last the full 2 ms delay.
        XCTAssertLessThanOrEqual(longest, 200_000)
        var late: UInt64 = 0
        for _ in 0..<50 {
            id += 1
            _ = s.enqueue(id: id, now: now)
            let start = now
            now += 10_000
            id += 1
            _ = s.enqueue(id: id, now: now)
            if case .waitUntil(let due) = s.next(now: now) { late = max(late, due - start) }
            while case .dispatch(let rest) = s.next(now: max(now, start + 200_000), flush: true) {
                s.batchDone(size: rest.count, durationNanos: 30_000, now: now)
            }
            now += 200_000
        }
        XCTAssertLessThanOrEqual(late, 100_000, "waits stay within a few batch runs (30 µs each)")
    }
}
