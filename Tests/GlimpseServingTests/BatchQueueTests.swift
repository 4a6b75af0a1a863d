import Foundation
import GlimpseEngine
import GlimpseTensor
import GlimpseTestSupport
import XCTest

@testable import GlimpseServing

/// A model that sums each item and can be held mid-batch, to test the queue's hand-offs. A batch the
/// test never releases fails after `releaseTimeout` seconds, so a test that stops early cannot leave a
/// worker blocked for good.
final class GateModel: BatchModel, @unchecked Sendable {
    let name = "gate"
    let inputs = [TensorSpec(name: "x", shape: [-1, 4], dtype: .float32)]
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let releaseTimeout: Double = 120
    private let lock = NSLock()
    private(set) var batchSizes: [Int] = []

    let threads = 2
    private(set) var parallelFlags: [Bool] = []

    func engineThreadsCPUNanos() -> UInt64 { 0 }

    func run(_ inputs: [Tensor], parallel: Bool) throws -> [Tensor] {
        let x = inputs[0]
        lock.lock(); batchSizes.append(x.shape[0]); parallelFlags.append(parallel); lock.unlock()
        entered.signal()
        try release.wait(for: "the test to release a batch of \(x.shape[0])", timeout: releaseTimeout)
        let n = x.shape[0]
        let out = Tensor(shape: [n, 1])
        let v = x.floats()
        for i in 0..<n { out.pointer(as: Float.self)[i] = v[(i * 4)..<(i * 4 + 4)].reduce(0, +) }
        return [out]
    }
}

final class BatchQueueTests: XCTestCase {
    func item(_ value: Float) -> Tensor { Tensor(shape: [4], floats: [value, value, value, value]) }

    /// Submits one item, lets the model's batch through as soon as it has entered, and checks the sum.
    func runReleased(_ value: Float, through queue: BatchQueue, model: GateModel) async throws {
        let t = Task { try await queue.submit(self.item(value)) }
        try model.entered.wait(for: "the batch of \(value) to enter the model", timeout: 30)
        model.release.signal()
        let scores = try await t.value.scores
        XCTAssertEqual(scores, [value * 4])
    }

    func testRequestsArrivingDuringABatchFormTheNextBatch() async throws {
        let model = GateModel()
        let queue = try BatchQueue(model: model, configuration: .init(maxBatchSize: 8, maxQueueDelayNanos: 0, delayPolicy: .fixed), workers: 1)
        defer { queue.shutdown() }
        let first = Task { try await queue.submit(item(1)) }
        try model.entered.wait(for: "the first batch to enter the model", timeout: 30)  // the first batch (of 1) is running
        let rest = (2...5).map { v in Task { try await queue.submit(self.item(Float(v))) } }
        try await waitUntil("4 requests queued", timeout: 30) { queue.queueLength >= 4 }
        for _ in 0..<2 { model.release.signal() }
        let r1 = try await first.value
        XCTAssertEqual(r1.scores, [4])
        XCTAssertEqual(r1.batchSize, 1)
        for (i, t) in rest.enumerated() {
            let r = try await t.value
            XCTAssertEqual(r.scores, [Float(i + 2) * 4])
            XCTAssertEqual(r.batchSize, 4)
        }
        XCTAssertEqual(model.batchSizes, [1, 4])
    }

    /// A lone batch uses all engine threads only while no batch of any model of the service runs: the
    /// models share the cores (`EngineOccupancy`).
    func testALoneBatchUsesAllThreadsOnlyWhenNoOtherModelsBatchRuns() async throws {
        let occupancy = EngineOccupancy()
        let config = BatchScheduler.Configuration(maxBatchSize: 1, maxQueueDelayNanos: 0, delayPolicy: .fixed)
        let (a, b) = (GateModel(), GateModel())
        let qa = try BatchQueue(model: a, configuration: config, workers: 2, occupancy: occupancy)
        let qb = try BatchQueue(model: b, configuration: config, workers: 2, occupancy: occupancy)
        defer { qa.shutdown(); qb.shutdown() }
        func runB(_ value: Float) async throws { try await runReleased(value, through: qb, model: b) }
        try await runB(1)  // alone: all threads
        let held = Task { try await qa.submit(self.item(2)) }
        try a.entered.wait(for: "A's batch to enter the model", timeout: 30)  // A's batch is running
        XCTAssertEqual(occupancy.count, 1)
        try await runB(3)  // beside A's batch: its own thread only
        a.release.signal()
        let heldScores = try await held.value.scores
        XCTAssertEqual(heldScores, [8])
        XCTAssertEqual(occupancy.count, 0)
        try await runB(4)  // alone again
        XCTAssertEqual(a.parallelFlags, [true])
        XCTAssertEqual(b.parallelFlags, [true, false, true])
    }

    /// Nor while batches have lately overlapped: the share of recent batches that began while another
    /// was running (an exponential average) must stay under `maxOverlap`.
    func testALoneBatchUsesAllThreadsOnlyWhileBatchesRarelyOverlap() async throws {
        let occupancy = EngineOccupancy(maxOverlap: 0.2)
        XCTAssertTrue(occupancy.overlapsRarely())  // no batch yet
        // Batches one after another: never beside another.
        for _ in 0..<20 {
            XCTAssertEqual(occupancy.begin(), 0)
            occupancy.end()
        }
        XCTAssertEqual(occupancy.recentOverlap, 0)
        XCTAssertTrue(occupancy.overlapsRarely())
        // Four batches each begun beside a running one: 1 - (15/16)^4 = 0.228 of the recent batches.
        _ = occupancy.begin()
        for _ in 0..<4 {
            XCTAssertEqual(occupancy.begin(), 1)
            occupancy.end()
        }
        occupancy.end()
        XCTAssertEqual(occupancy.recentOverlap, 1 - pow(15.0 / 16, 4), accuracy: 1e-9)
        XCTAssertFalse(occupancy.overlapsRarely())
        // Lone batches again bring the share back under the bound: (1 - 0.228) · (15/16)^n < 0.2 from n = 22.
        for _ in 0..<22 {
            _ = occupancy.begin()
            occupancy.end()
        }
        XCTAssertTrue(occupancy.overlapsRarely())
        XCTAssertTrue(EngineOccupancy(maxOverlap: 1).overlapsRarely())
        XCTAssertFalse(EngineOccupancy(maxOverlap: 0).overlapsRarely())

        // Through the queue: with batches overlapping, a lone batch keeps to one thread; after lone
        // batches one after another, it uses all of them.
        let model = GateModel()
        let queue = try BatchQueue(model: model, configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, delayPolicy: .fixed),
                                   workers: 2, occupancy: occupancy)
        defer { queue.shutdown() }
        func runOne(_ value: Float) async throws { try await runReleased(value, through: queue, model: model) }
        _ = occupancy.begin()
        for _ in 0..<8 { _ = occupancy.begin(); occupancy.end() }
        occupancy.end()
        try await runOne(1)
        // The worker counts itself free after resuming its callers: wait for that (the busy time is
        // added under the same lock), or the next batch may see it still busy and keep to one thread.
        for _ in 0..<2_000 where queue.engineBusyNanos == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        for _ in 0..<40 { _ = occupancy.begin(); occupancy.end() }
        try await runOne(2)
        XCTAssertEqual(model.parallelFlags, [false, true])
    }

    func testUnloadAnswersWaitingRequestsWithModelUnavailable() async throws {
        let model = GateModel()
        let queue = try BatchQueue(model: model, configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, delayPolicy: .fixed), workers: 1)
        let running = Task { try await queue.submit(item(1)) }
        try model.entered.wait(for: "the first batch to enter the model", timeout: 30)
        let waiting = (0..<3).map { _ in Task { try await queue.submit(self.item(2)) } }
        try await waitUntil("3 requests queued", timeout: 30) { queue.queueLength >= 3 }
        queue.close(failingWaiting: .modelUnavailable("unloaded"))
        for t in waiting {
            do {
                _ = try await t.value
                XCTFail("a waiting request must not run after unload")
            } catch let e as ServingError {
                XCTAssertEqual(e, .modelUnavailable("unloaded"))
            }
        }
        model.release.signal()
        let r = try await running.value  // the batch already running finishes
        XCTAssertEqual(r.scores, [4])
        do {
            _ = try await queue.submit(item(3))
            XCTFail("a closed queue must refuse")
        } catch let e as ServingError {
            guard case .modelUnavailable = e else { return XCTFail("\(e)") }
        }
    }

    func testQueueFullIsOverloadedError() async throws {
        let model = GateModel()
        let queue = try BatchQueue(model: model, configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, maxQueueLength: 2, delayPolicy: .fixed), workers: 1)
        let running = Task { try await queue.submit(item(1)) }
        try model.entered.wait(for: "the first batch to enter the model", timeout: 30)
        let waiting = (0..<2).map { _ in Task { try await queue.submit(self.item(1)) } }
        try await waitUntil("2 requests queued", timeout: 30) { queue.queueLength >= 2 }
        do {
            _ = try await queue.submit(item(1))
            XCTFail("expected queue_full")
        } catch let e as ServingError {
            guard case .overloaded(let reason, let retry) = e else { return XCTFail("\(e)") }
            XCTAssertEqual(reason, "queue_full")
            XCTAssertGreaterThan(retry, 0)
        }
        for _ in 0..<3 { model.release.signal() }
        _ = try await running.value
        for t in waiting { _ = try await t.value }
        queue.shutdown()
    }

    /// A batch's input is its items in order; a batch of one is the item's own storage (no copy); an
    /// item of the wrong size or type fails the batch with an error naming both.
    func testAssembleCopiesItemsInOrderAndKeepsASingleItem() throws {
        let items = (1...3).map { v in Tensor(shape: [4], floats: (0..<4).map { Float(v * 10 + $0) }) }
        let batch = try BatchQueue.assemble(items, itemShape: [4], dtype: .float32)
        XCTAssertEqual(batch.shape, Shape([3, 4]))
        XCTAssertEqual(batch.floats(), [10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33])
        let one = try BatchQueue.assemble([items[1]], itemShape: [4], dtype: .float32)
        XCTAssertEqual(one.shape, Shape([1, 4]))
        XCTAssertEqual(one.floats(), [20, 21, 22, 23])
        XCTAssertTrue(one.storage === items[1].storage)
        XCTAssertThrowsError(try BatchQueue.assemble([items[0], Tensor(shape: [5])], itemShape: [4], dtype: .float32)) { error in
            XCTAssertTrue("\(error)".contains("20 bytes"), "\(error)")
        }
        XCTAssertThrowsError(try BatchQueue.assemble([Tensor(shape: [4], dtype: .int32)], itemShape: [4], dtype: .float32))
    }
}
