@testable import GlimpseEngine
import XCTest

/// `PlanCache`: plans of a batch size idle for `idleNanos` are freed at the next sweep; batch 1's stay.
final class PlanCacheTests: XCTestCase {
    let second: UInt64 = 1_000_000_000

    func testIdleSizesAreFreedAndBatchOneStays() {
        var cache = PlanCache<String>(idleNanos: 10 * second)
        cache.maxSizes = 3  // the idle rule alone
        cache.put(["b1"], batch: 1, now: 0)
        cache.put(["b32"], batch: 32, now: 1 * second)
        cache.put(["b8"], batch: 8, now: 5 * second)
        XCTAssertEqual(cache.count, 3)
        // 10 s after batch 32 last ran: it goes, batch 8 (6 s idle) stays.
        cache.put(["b1"], batch: 1, now: 11 * second)
        XCTAssertNil(cache.take(batch: 32))
        XCTAssertEqual(cache.take(batch: 8), "b8")
        cache.put(["b8"], batch: 8, now: 12 * second)
        // Long after: everything but batch 1's plans goes.
        cache.put(["b1"], batch: 1, now: 100 * second)
        XCTAssertNil(cache.take(batch: 8))
        XCTAssertEqual(cache.count, 3, "batch 1's three plans stay however idle")
    }

    func testASizeInUseIsKeptWhileItRuns() {
        var cache = PlanCache<String>(idleNanos: 10 * second)
        cache.put(["a", "b"], batch: 16, now: 0)
        // One of the two plans runs now and then: the size stays.
        for t in stride(from: UInt64(5), through: 60, by: 5) {
            let plan = cache.take(batch: 16)
            XCTAssertNotNil(plan)
            cache.put([plan ?? ""], batch: 16, now: t * second)
        }
        XCTAssertEqual(cache.count, 2)
    }

    func testSweepsAtMostOncePerSweepInterval() {
        var cache = PlanCache<String>(idleNanos: 2 * second)
        cache.put(["b4"], batch: 4, now: 0)
        cache.put(["b1"], batch: 1, now: 1 * second)   // sweeps (first), batch 4 only 1 s idle
        cache.put(["b1"], batch: 1, now: 1 * second + second / 2)  // no sweep due yet
        XCTAssertEqual(cache.count, 3)
        cache.put(["b1"], batch: 1, now: 2 * second)   // sweeps: batch 4 idle 2 s
        XCTAssertEqual(cache.count, 3, "b4 freed, three b1")
        XCTAssertNil(cache.take(batch: 4))
    }

    func testReleaseKeepsOnlyTheNamedSizes() {
        var cache = PlanCache<String>(idleNanos: 10 * second)
        cache.maxSizes = 3
        cache.put(["b1"], batch: 1, now: 0)
        cache.put(["b2"], batch: 2, now: 0)
        cache.put(["b4"], batch: 4, now: 0)
        cache.release(keeping: [1, 4])
        XCTAssertEqual(cache.count, 2)
        XCTAssertNil(cache.take(batch: 2))
    }
}

extension PlanCacheTests {
    /// At most `maxSizes` sizes besides batch 1 keep plans: putting back a fourth frees the least
    /// recently run one, whatever its idle time.
    func testOnlyTheMostRecentSizesKeepTheirPlans() {
        var cache = PlanCache<String>(idleNanos: 100 * second)
        cache.maxSizes = 3
        cache.put(["b1", "b1"], batch: 1, now: 0)
        cache.put(["b8"], batch: 8, now: 1)
        cache.put(["b16"], batch: 16, now: 2)
        cache.put(["b4"], batch: 4, now: 3)
        cache.put(["b8"], batch: 8, now: 4)   // 8 is now the most recent
        XCTAssertEqual(cache.count, 6)
        cache.put(["b32"], batch: 32, now: 5)  // a fourth size: 16 (least recent) goes
        XCTAssertNil(cache.take(batch: 16))
        XCTAssertEqual(cache.count, 6, "two b1, two b8, b4, b32")
        XCTAssertEqual(cache.take(batch: 4), "b4")
        // A size whose plans are all in use does not count: putting 2 back keeps 8 and 32.
        cache.put(["b2"], batch: 2, now: 6)
        XCTAssertNotNil(cache.take(batch: 8))
        XCTAssertNotNil(cache.take(batch: 32))
        XCTAssertEqual(cache.take(batch: 1), "b1")
    }
}

extension PlanCacheTests {
    /// By default one size besides batch 1 keeps its plans, every copy of it: under steady overload
    /// the workers run full batches of one size side by side, and those must not plan again.
    func testByDefaultOneOtherSizeKeepsAllItsCopies() {
        var cache = PlanCache<String>(idleNanos: 100 * second)
        XCTAssertEqual(cache.maxSizes, 1)
        cache.put(["b1", "b1"], batch: 1, now: 0)
        cache.put(["b8"], batch: 8, now: 1)
        cache.put(["b8"], batch: 8, now: 2)    // a second worker's copy stays
        XCTAssertEqual(cache.count, 4)
        cache.put(["b5"], batch: 5, now: 3)    // another size: both copies of 8 go, batch 1 stays
        XCTAssertNil(cache.take(batch: 8))
        XCTAssertEqual(cache.count, 3)
        XCTAssertEqual(cache.take(batch: 5), "b5")
        XCTAssertEqual(cache.take(batch: 1), "b1")
        XCTAssertEqual(cache.take(batch: 1), "b1")
    }
}
