import Foundation
import GlimpseEngine
import GlimpseTensor
import XCTest

@testable import GlimpseServing

/// A model whose run takes `perItem[n]` milliseconds per item at batch size n, and whose first
/// `slowSingles` runs of batch 1 take `slowFactor` times longer: a reload calibrating on cores the
/// old version keeps busy.
final class TimedModel: BatchModel, @unchecked Sendable {
    let name = "timed"
    let inputs = [TensorSpec(name: "x", shape: [-1, 1], dtype: .float32)]
    let threads = 1
    let perItem: [Int: Double]
    let slowSingles: Int
    let slowFactor: Double
    private let lock = NSLock()
    private var singles = 0

    init(perItem: [Int: Double], slowSingles: Int = 0, slowFactor: Double = 1) {
        self.perItem = perItem
        self.slowSingles = slowSingles
        self.slowFactor = slowFactor
    }

    func engineThreadsCPUNanos() -> UInt64 { 0 }

    func run(_ inputs: [Tensor], parallel: Bool) throws -> [Tensor] {
        let n = inputs[0].shape[0]
        var ms = Double(n) * (perItem[n] ?? 1)
        if n == 1 {
            lock.lock(); singles += 1; let slow = singles <= slowSingles; lock.unlock()
            if slow { ms *= slowFactor }
        }
        Thread.sleep(forTimeInterval: ms / 1000)
        return [Tensor(shape: [n, 1])]
    }
}

final class CalibrationConfirmTests: XCTestCase {
    func calibratedLimit(_ model: TimedModel) throws -> String {
        let queue = try BatchQueue(model: model, configuration: .init(maxBatchSize: 4, maxQueueDelayNanos: 0), workers: 1)
        defer { queue.shutdown() }
        try queue.calibrate()
        return queue.calibrationSummary
    }

    /// Every size costs 2 ms per item, but the first three single runs (the warm-up and both timed
    /// runs) take three times as long: batch 2 reads 3× cheaper per item. Timed again in turn, batch 1
    /// reads its true time and single runs are kept.
    func testASingleRunSlowedByContentionDoesNotPickALargerBatch() throws {
        let model = TimedModel(perItem: [1: 2, 2: 2, 4: 2], slowSingles: 3, slowFactor: 3)
        XCTAssertEqual(BatchScheduler.efficientBatchSize(calibration: [1: 6_000_000, 2: 4_000_000, 4: 8_000_000]), 2,
                       "the first pass alone would pick batch 2")
        let summary = try calibratedLimit(model)
        XCTAssertTrue(summary.hasPrefix("batches up to 1;"), summary)
    }

    /// Batch 4 really is half the cost per item: timed again, it keeps its place.
    func testARealSavingIsKept() throws {
        let model = TimedModel(perItem: [1: 2, 2: 1.6, 4: 1])
        let summary = try calibratedLimit(model)
        XCTAssertTrue(summary.hasPrefix("batches up to 4;"), summary)
    }
}
