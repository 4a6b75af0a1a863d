@testable import GlimpseServing
import XCTest

/// The CPU a request costs outside the engine, from made-up clock readings.
final class RequestOverheadTests: XCTestCase {
    let second: UInt64 = 1_000_000_000

    func testWindowsOfEnoughRequestsSetTheEstimate() {
        var o = RequestOverhead(cores: 2, windowNanos: second, minRequests: 50, weight: 0.5)
        XCTAssertTrue(o.isDue(now: 0))
        o.observe(now: 0, processCPU: 0, engineCPU: 0, requests: 0)
        XCTAssertNil(o.cpuNanosPerRequest)
        XCTAssertFalse(o.isDue(now: second / 2))
        // 1000 requests; 1.5 s of process CPU, 1.2 s of it in the engines: 300 µs each outside them.
        o.observe(now: second, processCPU: 1_500_000_000, engineCPU: 1_200_000_000, requests: 1000)
        XCTAssertEqual(o.cpuNanosPerRequest ?? 0, 300_000, accuracy: 1e-6)
        // Too few requests in a window: the estimate stays.
        o.observe(now: 2 * second, processCPU: 1_600_000_000, engineCPU: 1_200_000_000, requests: 1010)
        XCTAssertEqual(o.cpuNanosPerRequest ?? 0, 300_000, accuracy: 1e-6)
        // 100 µs per request in the next: halfway there.
        o.observe(now: 3 * second, processCPU: 1_700_000_000, engineCPU: 1_200_000_000, requests: 2010)
        XCTAssertEqual(o.cpuNanosPerRequest ?? 0, 200_000, accuracy: 1e-6)
        // Engine time above the process's (clock skew) counts as none outside it, never negative.
        o.observe(now: 4 * second, processCPU: 1_800_000_000, engineCPU: 2_000_000_000, requests: 3010)
        XCTAssertEqual(o.cpuNanosPerRequest ?? 0, 100_000, accuracy: 1e-6)
    }

    func testCapacityFollowsCPUTime() {
        var o = RequestOverhead(cores: 2, windowNanos: second, minRequests: 50, weight: 1)
        XCTAssertEqual(o.capacity(engineCPUNanosPerItem: 1_000_000) ?? 0, 2000, accuracy: 1e-9, "2 cores, 1 ms each, no overhead known")
        o.observe(now: 0, processCPU: 0, engineCPU: 0, requests: 0)
        o.observe(now: second, processCPU: 1_000_000_000, engineCPU: 750_000_000, requests: 1000)
        XCTAssertEqual(o.cpuNanosPerRequest ?? 0, 250_000, accuracy: 1e-6)
        // 2 cores / (1 ms + 0.25 ms) per request.
        XCTAssertEqual(o.capacity(engineCPUNanosPerItem: 1_000_000) ?? 0, 1600, accuracy: 1e-9)
        XCTAssertNil(o.capacity(engineCPUNanosPerItem: 0))
    }

    /// The cores the process gets: measured only in windows where its workers wanted more than the
    /// cores, drifting back to every core otherwise.
    func testAvailableCoresFromSaturatedWindows() {
        var o = RequestOverhead(cores: 2, windowNanos: second, minRequests: 50, weight: 0.5, saturation: 0.9)
        XCTAssertEqual(o.availableCores, 2)
        o.observe(now: 0, processCPU: 0, engineCPU: 0, engineBusy: 0, requests: 0)
        // Four workers busy the whole second (4 s of batch time), but the process got 1.2 s of CPU:
        // other work took the rest.
        o.observe(now: second, processCPU: 1_200_000_000, engineCPU: 1_000_000_000, engineBusy: 4 * second, requests: 1000)
        XCTAssertEqual(o.availableCores, 1.6, accuracy: 1e-9)
        o.observe(now: 2 * second, processCPU: 2_400_000_000, engineCPU: 2_000_000_000, engineBusy: 8 * second, requests: 2000)
        XCTAssertEqual(o.availableCores, 1.4, accuracy: 1e-9)
        // Capacity follows the cores it gets: 1.4 cores / (1 ms + 0.2 ms).
        XCTAssertEqual(o.capacity(engineCPUNanosPerItem: 1_000_000) ?? 0, 1.4e9 / 1.2e6, accuracy: 1e-6)
        // A light window (workers busy 0.5 s): the process used little CPU because it had little to do,
        // which says nothing about the cores; the estimate drifts back toward 2 (weight 0.05).
        o.observe(now: 3 * second, processCPU: 2_700_000_000, engineCPU: 2_250_000_000, engineBusy: 8 * second + second / 2, requests: 2100)
        XCTAssertEqual(o.availableCores, 1.4 + 0.05 * 0.6, accuracy: 1e-9)
        // A saturated window on a machine to itself: every core, never more.
        o.observe(now: 4 * second, processCPU: 4_900_000_000, engineCPU: 4_250_000_000, engineBusy: 11 * second, requests: 3100)
        XCTAssertEqual(o.availableCores, 1.43 + 0.5 * (2 - 1.43), accuracy: 1e-9)
    }

    /// Capacities use the lowest recent per-request figure, let rise slowly.
    func testCapacityOverheadIsTheLowestRecentWindow() {
        var o = RequestOverhead(cores: 2, windowNanos: second, minRequests: 50, weight: 0.5)
        o.recovery = 0.1
        o.observe(now: 0, processCPU: 0, engineCPU: 0, requests: 0)
        o.observe(now: second, processCPU: 400_000_000, engineCPU: 0, requests: 1000)  // 400 µs
        XCTAssertEqual(o.capacityNanosPerRequest ?? 0, 400_000, accuracy: 1e-6)
        o.observe(now: 2 * second, processCPU: 600_000_000, engineCPU: 0, requests: 2000)  // 200 µs
        XCTAssertEqual(o.capacityNanosPerRequest ?? 0, 200_000, accuracy: 1e-6)
        XCTAssertEqual(o.cpuNanosPerRequest ?? 0, 300_000, accuracy: 1e-6)
        o.observe(now: 3 * second, processCPU: 1_000_000_000, engineCPU: 0, requests: 3000)  // 400 µs again
        XCTAssertEqual(o.capacityNanosPerRequest ?? 0, 220_000, accuracy: 1e-6)
        XCTAssertEqual(o.capacity(engineCPUNanosPerItem: 780_000) ?? 0, 2000, accuracy: 1e-6)
    }
}
