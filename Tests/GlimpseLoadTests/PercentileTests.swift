import GlimpseLoad
import Histogram
import XCTest

final class PercentileTests: XCTestCase {
    func testSummaryOfKnownDistribution() {
        var h = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
        for v in 1...10_000 { _ = h.record(UInt64(v) * 100) }  // 0.1 ms ... 1000 ms in µs
        let s = LatencySummary(micros: h)
        XCTAssertEqual(s.count, 10_000)
        func close(_ a: Double, _ b: Double) { XCTAssertEqual(a, b, accuracy: b * 0.002) }
        close(s.p50, 500)
        close(s.p90, 900)
        close(s.p99, 990)
        close(s.p999, 999)
        close(s.max, 1000)
        close(s.mean, 500.05)
    }

    func testEmptyHistogramIsAllZero() {
        let s = LatencySummary(micros: Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 1_000_000, numberOfSignificantValueDigits: .three))
        XCTAssertEqual(s, LatencySummary(count: 0, mean: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0))
    }

    func testRecorderCountsOutcomesAndMergesAcrossConnections() {
        var a = LoadRecorder(), b = LoadRecorder()
        let ok = #"{"jsonrpc":"2.0","id":1,"result":{"variant":"squeezenet1.1-fp32","timing_ms":{"queue":2.5,"inference":7,"total":11},"batch_size":4}}"#
        let shed = #"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"overloaded","data":{"reason":"queue_full","retry_after_ms":50}}}"#
        let t = H2Timing(submitted: 0, headersSent: 1_000_000, completed: 5_000_000)
        a.record(.success(H2Response(status: 200, headers: [], body: Array(ok.utf8))), intendedNs: 0, timing: t, measureStartNs: 0)
        b.record(.success(H2Response(status: 503, headers: [], body: Array(shed.utf8))), intendedNs: 0, timing: t, measureStartNs: 0)
        b.record(.failure(H2Error(.timeout, detail: "t")), intendedNs: 0, timing: t, measureStartNs: 0)
        a.merge(b)
        XCTAssertEqual(a.completed, 3)
        XCTAssertEqual(a.succeeded, 1)
        XCTAssertEqual(a.byStatus, [200: 1, 503: 1])
        XCTAssertEqual(a.byRPCError, ["-32000 queue_full": 1])
        XCTAssertEqual(a.byTransportError, ["timeout": 1])
        XCTAssertEqual(a.variants, ["squeezenet1.1-fp32": 1])
        XCTAssertEqual(Double(a.latency.max) / 1000, 5, accuracy: 0.01)
        XCTAssertEqual(Double(a.serviceTime.max) / 1000, 4, accuracy: 0.01)
        XCTAssertEqual(Double(a.serverQueue.max) / 1000, 2.5, accuracy: 0.01)
        XCTAssertEqual(Double(a.serverInference.max) / 1000, 7, accuracy: 0.01)
    }

    func testInspectorHandlesBatchesAndNonJSON() {
        let batch = #"[{"jsonrpc":"2.0","id":1,"result":{"variant":"a"}},{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}}]"#
        let o = ResponseInspector.inspect(status: 200, body: Array(batch.utf8))
        XCTAssertEqual(o.results.map(\.variant), ["a"])
        XCTAssertEqual(o.errors.map(\.label), ["-32602"])
        XCTAssertFalse(o.isSuccess)
        XCTAssertTrue(ResponseInspector.inspect(status: 200, body: Array("OK".utf8)).isSuccess)
        let images = #"{"jsonrpc":"2.0","id":1,"result":[{"variant":"a","timing_ms":{"queue":1,"inference":2}},{"variant":"b"}]}"#
        XCTAssertEqual(ResponseInspector.inspect(status: 200, body: Array(images.utf8)).results.map(\.variant), ["a", "b"])
        XCTAssertFalse(ResponseInspector.inspect(status: 404, body: []).isSuccess)
    }
}
