import GlimpseServing
import XCTest

/// The feedback on predicted completion times (`DeadlineMargin`) and its use by the scheduler.
final class DeadlineMarginTests: XCTestCase {
    let ms: UInt64 = 1_000_000

    /// A queue whose predictions run short by a hidden 40 %: a request misses when the margin leaves
    /// too little room, with a probability that falls as the factor grows (deterministic generator).
    /// The factor settles where the miss share is near the target, and the misses over the run stay
    /// under 1 % (the soak's goal), against 20 % without the margin.
    func testTheFactorSettlesWhereTheMissShareIsNearTheTarget() {
        var margin = DeadlineMargin()
        var rng = SplitMix(seed: 7)
        func missChance(_ factor: Double) -> Double { min(1, max(0, (1.4 - factor) / 2)) }
        XCTAssertEqual(missChance(1), 0.2, accuracy: 1e-9)
        var misses = 0, total = 0
        for i in 0..<200_000 {
            let missed = rng.unit() < missChance(margin.factor)
            if missed { margin.observe(misses: 1) } else { margin.observe(hits: 1) }
            if i >= 20_000 { total += 1; misses += missed ? 1 : 0 }
        }
        let share = Double(misses) / Double(total)
        XCTAssertLessThan(share, 0.01, "misses after the first 20,000 requests: \(share)")
        XCTAssertGreaterThan(share, 0.001, "the factor overshoots: \(share)")
        XCTAssertEqual(margin.factor, 1.4 - 2 * margin.targetMissShare, accuracy: 0.05)
    }

    /// Without misses the factor goes back to 1, and never below it or over the ceiling.
    func testTheFactorReturnsToOneAndStaysWithinItsBounds() {
        var margin = DeadlineMargin()
        margin.observe(misses: 1000)
        XCTAssertEqual(margin.factor, margin.ceiling)
        margin.observe(hits: 1_000_000)
        XCTAssertEqual(margin.factor, 1)
        margin.observe(hits: 10)
        XCTAssertEqual(margin.factor, 1)
    }

    /// Expiries in the queue widen the scheduler's predictions, so the next request that would just
    /// have made its deadline is refused at admission; requests dispatched in time narrow them again.
    func testExpiriesMakeTheSchedulerRefuseEarlier() {
        var s = BatchScheduler(configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, delayPolicy: .fixed), workers: 1)
        s.adopt(calibration: [1: 10 * ms])
        XCTAssertEqual(s.admit(images: 1, incoming: 0, now: 0, deadline: 11 * ms, preprocessNanos: 0, decodeAhead: 0, decodeThreads: 1), .admit)
        // Ten requests expire in the queue: the worker was busy past their deadlines.
        XCTAssertEqual(s.enqueue(id: 100, now: 0), .accepted)
        XCTAssertEqual(s.next(now: 0), .dispatch(ids: [100]))
        for id in 1...10 { XCTAssertEqual(s.enqueue(id: UInt64(id), now: ms, deadline: UInt64(20 + 10 * (id - 1)) * ms), .accepted) }
        XCTAssertEqual(s.next(now: 200 * ms), .expire(ids: Array(1...10)))
        XCTAssertGreaterThan(s.margin.factor, 1.5)
        s.batchDone(size: 1, durationNanos: 10 * ms, now: 200 * ms)
        guard case .refuse(.deadlineUnmeetable, _) = s.admit(images: 1, incoming: 0, now: 210 * ms, deadline: 221 * ms, preprocessNanos: 0,
                                                             decodeAhead: 0, decodeThreads: 1) else {
            return XCTFail("a request predicted at 10 ms of an 11 ms budget is still admitted after ten expiries")
        }
        // Requests that go to the engine in time bring the factor back down.
        var now = 210 * ms
        for id in 200..<6200 {
            XCTAssertEqual(s.enqueue(id: UInt64(id), now: now, deadline: now + 1000 * ms), .accepted)
            XCTAssertEqual(s.next(now: now), .dispatch(ids: [UInt64(id)]))
            now += 10 * ms
            s.batchDone(size: 1, durationNanos: 10 * ms, now: now)
        }
        XCTAssertEqual(s.margin.factor, 1)
        XCTAssertEqual(s.admit(images: 1, incoming: 0, now: now, deadline: now + 11 * ms, preprocessNanos: 0, decodeAhead: 0, decodeThreads: 1), .admit)
    }
}

/// A small deterministic generator for the simulations above.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
