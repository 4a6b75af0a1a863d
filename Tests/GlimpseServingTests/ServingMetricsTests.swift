import Foundation
import GlimpseTensor
import GlimpseTestSupport
import MetricsTestKit
import XCTest

@testable import GlimpseServing

/// What the serving library records, asserted through swift-metrics' `MetricsTestKit` backend
/// injected into the parts under test (no global bootstrap, so tests stay parallel-safe).
final class ServingMetricsTests: XCTestCase {
    func item(_ value: Float) -> Tensor { Tensor(shape: [4], floats: [value, value, value, value]) }

    /// Waits (up to 5 s) until `condition` holds.
    func eventually(_ what: String, _ condition: () throws -> Bool) async throws {
        for _ in 0..<5000 {
            if try condition() { return }
            try await Task.sleep(nanoseconds: 1_000_000)
        }
        XCTFail("timed out waiting for \(what)")
    }

    func testQueueDepthGaugeFollowsTheQueue() async throws {
        let metrics = TestMetrics()
        let model = GateModel()
        let queue = try BatchQueue(model: model, configuration: .init(maxBatchSize: 8, maxQueueDelayNanos: 0, delayPolicy: .fixed),
                                   workers: 1, metrics: ServingMetrics(MetricHandles(factory: metrics)))
        defer { queue.shutdown() }
        let first = Task { try await queue.submit(item(1)) }
        try model.entered.wait(for: "the first batch to enter the model", timeout: 30)  // the first batch (of 1) is running; the next requests wait
        var rest: [Task<BatchItemResult, any Error>] = []
        for v in 2...5 {
            rest.append(Task { try await queue.submit(self.item(Float(v))) })
            try await eventually("\(v - 1) queued") { queue.queueLength == v - 1 }
        }
        let depth = try metrics.expectGauge(GlimpseMetrics.queueDepth, [("model", "gate")])
        try await eventually("the gauge at 4") { depth.lastValue == 4 }
        for _ in 0..<2 { model.release.signal() }
        _ = try await first.value
        for t in rest { _ = try await t.value }
        // The second batch took all four: the queue is empty again.
        XCTAssertEqual(depth.lastValue, 0)
        XCTAssertEqual(depth.values.max(), 4)
    }

    func testFamilyRouterAndLoadsRecordNothingWithoutHandles() throws {
        // Parts built on their own record into `MetricHandles.none`: nothing to bootstrap, nothing kept.
        let router = FamilyRouter()
        XCTAssertTrue(router.metrics.handles === MetricHandles.none)
        let metrics = TestMetrics()
        let handles = MetricHandles(factory: metrics)
        handles.recordRequest(method: "classify", model: "m", variant: "v", outcome: "ok", reason: "")
        handles.recordRequest(method: "classify", model: "m", variant: "v", outcome: "ok", reason: "")
        let counter = try metrics.expectCounter(GlimpseMetrics.requests, [
            ("method", "classify"), ("model", "m"), ("variant", "v"), ("outcome", "ok"), ("reason", ""),
        ])
        XCTAssertEqual(counter.totalValue, 2)
        // One metric object per series, kept by the handles.
        XCTAssertEqual(metrics.counters.count, 1)
    }

    func testRequestCountersAreKeptPerSeries() throws {
        let metrics = TestMetrics()
        let handles = MetricHandles(factory: metrics)
        for _ in 0..<3 { handles.recordRequest(method: "classify", model: "m", variant: "v", outcome: "ok", reason: "") }
        handles.recordRequest(method: "classify", model: "m", variant: "v", outcome: "error", reason: "bad_base64")
        handles.recordRequest(method: "classify", model: "m", variant: "v2", outcome: "ok", reason: "")
        handles.recordRequest(method: "classify", model: "m", variant: "v", outcome: "error", reason: "bad_base64")
        func total(_ variant: String, _ outcome: String, _ reason: String) throws -> Int64 {
            try metrics.expectCounter(GlimpseMetrics.requests, [
                ("method", "classify"), ("model", "m"), ("variant", variant), ("outcome", outcome), ("reason", reason),
            ]).totalValue
        }
        XCTAssertEqual(try total("v", "ok", ""), 3)
        XCTAssertEqual(try total("v", "error", "bad_base64"), 2)
        XCTAssertEqual(try total("v2", "ok", ""), 1)
        XCTAssertEqual(metrics.counters.count, 3)
    }
}
