@testable import GlimpseServing
import XCTest

/// A version is timed at every batch size it can serve before it takes traffic.
final class CalibrationSizesTests: XCTestCase {
    func testCalibrationCoversEveryBatchSize() {
        XCTAssertEqual(BatchQueue.calibrationSizes(allowed: nil, maxBatchSize: 32), [1, 2, 4, 8, 16, 32])
        XCTAssertEqual(BatchQueue.calibrationSizes(allowed: nil, maxBatchSize: 12), [1, 2, 4, 8, 12])
        XCTAssertEqual(BatchQueue.calibrationSizes(allowed: nil, maxBatchSize: 1), [1])
        XCTAssertEqual(BatchQueue.calibrationSizes(allowed: [8, 1, 4, 4], maxBatchSize: 32), [1, 4, 8])
    }
}
