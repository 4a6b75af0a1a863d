import Foundation
import GlimpseEngine
import GlimpseTensor
import XCTest

@testable import GlimpseServing

/// A model that sums each item and can be held mid-batch, to test the queue's hand-offs.
final class GateModel: BatchModel, @unchecked Sendable {
    let name = "gate"
    let inputs = [TensorSpec(name: "x", shape: [-1, 4], dtype: .float32)]
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private(set) var batchSizes: [Int] = []

    let threads = 2
    private(set) var parallelFlags: [Bool] = []

    func engineThreadsCPUNanos() -> UInt64 { 0 }

    func run(_ inputs: [Tensor], parallel: Bool) throws -> [Tensor] {
        let x = inputs[0]
        lock.lock(); batchSizes.append(x.shape[0]); parallelFlags.append(parallel); lock.unlock()
        entered.signal()
        release.wait()
        let n = x.shape[0]
        let out = Tensor(shape: [n, 1])
        let v = x.floats()
        for i in 0..<n { out.pointer(as: Float.self)[i] = v[(i * 4)..<(i * 4 + 4)].reduce(0, +) }
        return [out]
    }
}

/// Monotonic time and process CPU time that a test moves by hand.
final class FakeClocks: @unchecked Sendable {
    private let lock = NSLock()
    private var time: UInt64 = 1_000_000_000, used: UInt64 = 0
    var now: UInt64 { lock.withLock { time } }
    var cpu: UInt64 { lock.withLock { used } }
    func advance(_ nanos: UInt64, cpu: UInt64) { lock.withLock { time += nanos; used += cpu } }
}

final class BatchQueueTests: XCTestCase {
    func item(_ value: Float) -> Tensor { Tensor(shape: [4], floats: [value, value, value, value]) }

    func testRequestsArrivingDuringABatchFormTheNextBatch() async throws {
        let model = GateModel()
        let queue = try BatchQueue(model: model, configuration: .init(maxBatchSize: 8, maxQueueDelayNanos: 0, delayPolicy: .fixed), workers: 1)
        defer { queue.shutdown() }
        let first = Task { try await queue.submit(item(1)) }
        model.entered.wait()  // the first batch (of 1) is running
        let rest = (2...5).map { v in Task { try await queue.submit(self.item(Float(v))) } }
        while queue.queueLength < 4 { try await Task.sleep(nanoseconds: 1_000_000) }
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
        func runB(_ value: Float) async throws {
            let t = Task { try await qb.submit(self.item(value)) }
            b.entered.wait()
            b.release.signal()
            let scores = try await t.value.scores
            XCTAssertEqual(scores, [value * 4])
        }
        try await runB(1)  // alone: all threads
        let held = Task { try await qa.submit(self.item(2)) }
        a.entered.wait()  // A's batch is running
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

    /// Nor while the process has lately kept more than `maxLoad` of the cores busy: the load is the
    /// process's CPU over the last complete window, from the clocks given (fakes here).
    func testALoneBatchUsesAllThreadsOnlyWhileTheCoresAreNotMostlyBusy() async throws {
        let clocks = FakeClocks()
        let ms: UInt64 = 1_000_000
        let occupancy = EngineOccupancy(maxLoad: 0.5, cores: 2, windowNanos: 20 * ms, clock: { clocks.now }, cpu: { clocks.cpu })
        XCTAssertTrue(occupancy.hasSpareCores())  // nothing measured yet
        clocks.advance(20 * ms, cpu: 30 * ms)  // 0.75 of 2 cores
        XCTAssertFalse(occupancy.hasSpareCores())
        clocks.advance(10 * ms, cpu: 0)  // the window is still open: the last complete one counts
        XCTAssertFalse(occupancy.hasSpareCores())
        clocks.advance(10 * ms, cpu: 0)  // 20 ms at 0
        XCTAssertTrue(occupancy.hasSpareCores())
        clocks.advance(20 * ms, cpu: 20 * ms)  // exactly half: not below it
        XCTAssertFalse(occupancy.hasSpareCores())
        XCTAssertTrue(EngineOccupancy(maxLoad: 1, clock: { clocks.now }, cpu: { clocks.cpu }).hasSpareCores())
        XCTAssertFalse(EngineOccupancy(maxLoad: 0, clock: { clocks.now }, cpu: { clocks.cpu }).hasSpareCores())

        // Through the queue: a lone batch with the cores busy keeps to one thread, then uses all of
        // them once the load falls.
        let model = GateModel()
        let queue = try BatchQueue(model: model, configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, delayPolicy: .fixed),
                                   workers: 2, occupancy: occupancy)
        defer { queue.shutdown() }
        func runOne(_ value: Float) async throws {
            let t = Task { try await queue.submit(self.item(value)) }
            model.entered.wait()
            model.release.signal()
            let scores = try await t.value.scores
            XCTAssertEqual(scores, [value * 4])
        }
        clocks.advance(20 * ms, cpu: 36 * ms)
        try await runOne(1)
        clocks.advance(20 * ms, cpu: 2 * ms)
        try await runOne(2)
        XCTAssertEqual(model.parallelFlags, [false, true])
    }

    func testUnloadAnswersWaitingRequestsWithModelUnavailable() async throws {
        let model = GateModel()
        let queue = try BatchQueue(model: model, configuration: .init(maxBatchSize: 1, maxQueueDelayNanos: 0, delayPolicy: .fixed), workers: 1)
        let running = Task { try await queue.submit(item(1)) }
        model.entered.wait()
        let waiting = (0..<3).map { _ in Task { try await queue.submit(self.item(2)) } }
        while queue.queueLength < 3 { try await Task.sleep(nanoseconds: 1_000_000) }
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
        model.entered.wait()
        let waiting = (0..<2).map { _ in Task { try await queue.submit(self.item(1)) } }
        while queue.queueLength < 2 { try await Task.sleep(nanoseconds: 1_000_000) }
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
