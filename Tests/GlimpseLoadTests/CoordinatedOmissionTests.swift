import GlimpseLoad
import XCTest

/// Latency is measured from each request's intended send time, so a server that stalls cannot
/// hide the stall by slowing the generator down (coordinated omission).
final class CoordinatedOmissionTests: XCTestCase {
    /// Fake clock: 100 req/s intended, a single-worker server taking 20 ms each (capacity 50/s).
    /// Queueing delay grows linearly; the intended-time latency must show it while the
    /// actual-send (service) time stays at 20 ms.
    func testFakeClockOverloadShowsQueueingDelay() {
        var schedule = ArrivalSchedule(kind: .constant, rate: 100)
        var recorder = LoadRecorder()
        var serverFree: UInt64 = 0
        let service: UInt64 = 20_000_000
        for _ in 0..<100 {
            let intended = schedule.next()
            let start = max(intended, serverFree)  // sent when the single stream slot frees up
            serverFree = start + service
            let timing = H2Timing(submitted: intended, headersSent: start, completed: serverFree)
            recorder.record(.success(H2Response(status: 200, headers: [], body: [])), intendedNs: intended, timing: timing, measureStartNs: 0)
        }
        // Request i completes at 20 ms * (i+1) but was intended at 10 ms * i: latency 10 ms * i + 20 ms.
        XCTAssertEqual(Double(recorder.latency.max) / 1000, 1010, accuracy: 5)
        XCTAssertEqual(Double(recorder.latency.valueAtPercentile(50)) / 1000, 510, accuracy: 15)
        XCTAssertEqual(Double(recorder.serviceTime.max) / 1000, 20, accuracy: 0.1)
    }

    /// A real slow server: one stream at a time, 25 ms each; open loop at 80 req/s over 1.5 s.
    func testOpenLoopAgainstSlowServerMeasuresFromIntendedTime() throws {
        let server = try TinyH2Server(serviceTime: 0.025, maxConcurrentStreams: 1) { _, _, _ in (200, [], Array("ok".utf8)) }
        defer { server.stop() }
        let config = LoadConfiguration(port: server.port, connections: 1, mode: .constantRate(80), duration: 1.5, warmup: 0,
                                       maxRequests: 10_000, requestTimeout: 10)
        let result = try LoadRunner.run(config, corpus: .plain(path: "/slow"))
        XCTAssertGreaterThan(result.succeeded, 30)
        // Service time stays near 25 ms ...
        XCTAssertLessThan(result.serviceTime.p50, 60)
        // ... but requests wait in line: from intended time the tail is several hundred ms.
        XCTAssertGreaterThan(result.latency.max, 300)
        XCTAssertGreaterThan(result.latency.p90, 3 * result.serviceTime.p90)
        XCTAssertLessThan(result.achievedRate, 50)
    }
}
