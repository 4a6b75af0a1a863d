import GlimpseServing
import XCTest

/// What the batch scheduler's latency model does when its queue goes idle.
final class BatchSchedulerIdleTests: XCTestCase {
    let ms: UInt64 = 1_000_000

    /// Slow batches (a contended machine) raise the predictions; once the queue has been idle for 100 ms
    /// the model is what calibration measured again, so variant selection tries the queue again.
    func testAnIdleQueueForgetsSlowBatches() {
        var s = BatchScheduler(configuration: .init(maxBatchSize: 8, maxQueueDelayNanos: 2 * ms, delayPolicy: .adaptive), workers: 1)
        s.adopt(calibration: [1: 1 * ms, 8: 4 * ms])
        let calibrated = s.latency
        s.batchDone(size: 1, durationNanos: 60 * ms, now: 1000 * ms)
        XCTAssertNotEqual(s.latency, calibrated)
        s.forgetIfIdle(now: 1050 * ms)
        XCTAssertNotEqual(s.latency, calibrated, "not idle long enough")
        XCTAssertEqual(s.enqueue(id: 1, now: 1600 * ms), .accepted)
        s.forgetIfIdle(now: 1600 * ms)
        XCTAssertNotEqual(s.latency, calibrated, "a request waits")
        var idle = BatchScheduler(configuration: .init(maxBatchSize: 8, maxQueueDelayNanos: 2 * ms, delayPolicy: .adaptive), workers: 1)
        idle.adopt(calibration: [1: 1 * ms, 8: 4 * ms])
        idle.batchDone(size: 1, durationNanos: 60 * ms, now: 1000 * ms)
        idle.forgetIfIdle(now: 1600 * ms)
        XCTAssertEqual(idle.latency, calibrated)
    }
}
