@testable import GlimpseServing
import XCTest

/// The engine CPU per item at full batches, from a made-up calibration and made-up batches.
final class FullBatchCostTests: XCTestCase {
    // A batch costs 2 ms plus 1 ms per item: 3 ms for 1, 10 ms for 8, 34 ms for 32.
    let calibration: [Int: UInt64] = [1: 3_000_000, 8: 10_000_000, 32: 34_000_000]

    func testCalibrationGivesTheFullBatchCostAndInterpolatesBetweenSizes() throws {
        let c = try XCTUnwrap(FullBatchCost(calibrated: calibration, fullSize: 32))
        XCTAssertEqual(c.cpuNanosPerItem, 34_000_000 / 32, accuracy: 1e-6)
        XCTAssertEqual(c.calibratedNanos(size: 4), 3_000_000 + 7_000_000 * 3 / 7, accuracy: 1e-6)
        XCTAssertEqual(c.calibratedNanos(size: 20), 22_000_000, accuracy: 1e-6)
        // Beyond the largest measured size: per item as the largest.
        XCTAssertEqual(c.calibratedNanos(size: 64), 68_000_000, accuracy: 1e-6)
        // A full size that was not measured: interpolated too.
        let d = try XCTUnwrap(FullBatchCost(calibrated: calibration, fullSize: 16))
        XCTAssertEqual(d.cpuNanosPerItem, 18_000_000.0 / 16, accuracy: 1e-6)
        XCTAssertNil(FullBatchCost(calibrated: [:], fullSize: 32))
        XCTAssertNil(FullBatchCost(calibrated: [4: 0], fullSize: 32))
    }

    /// Under a split, the large variant runs small batches; their higher cost per item is what
    /// calibration predicts for their size, so the full-batch estimate does not move.
    func testSmallBatchesAtCalibratedCostKeepTheEstimate() throws {
        var c = try XCTUnwrap(FullBatchCost(calibrated: calibration, fullSize: 32, weight: 0.5))
        for _ in 0..<50 { c.observe(size: 2, cpuNanos: 4_000_000) }  // 2 ms per item, as calibrated
        XCTAssertEqual(c.cpuNanosPerItem, 34_000_000 / 32, accuracy: 1)
        XCTAssertEqual(c.ratio, 1, accuracy: 1e-9)
    }

    func testBatchesSlowerThanCalibrationRaiseTheEstimateGradually() throws {
        var c = try XCTUnwrap(FullBatchCost(calibrated: calibration, fullSize: 32, weight: 0.5))
        c.observe(size: 8, cpuNanos: 20_000_000)  // twice calibration's time
        XCTAssertEqual(c.ratio, 1.5, accuracy: 1e-9)
        for _ in 0..<60 { c.observe(size: 8, cpuNanos: 20_000_000) }
        XCTAssertEqual(c.cpuNanosPerItem, 2 * 34_000_000 / 32, accuracy: 1)
        // Empty batches and zero readings are ignored.
        c.observe(size: 0, cpuNanos: 5)
        c.observe(size: 8, cpuNanos: 0)
        XCTAssertEqual(c.ratio, 2, accuracy: 1e-9)
    }

    /// A calibration run on two threads: its wall time is half the CPU time it used.
    func testInitialRatioForParallelCalibration() throws {
        let c = try XCTUnwrap(FullBatchCost(calibrated: calibration, fullSize: 32, initialRatio: 2))
        XCTAssertEqual(c.cpuNanosPerItem, 2 * 34_000_000 / 32, accuracy: 1e-6)
    }
}
