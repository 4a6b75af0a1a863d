import Foundation
import GlimpseLoad
import XCTest

/// End to end: the runner against the tiny server answering like Glimpse's `/rpc`.
final class LoadRunnerTests: XCTestCase {
    /// Every 5th request is shed (HTTP 503, -32000 queue_full); the rest alternate two variants.
    private func glimpseLike() throws -> TinyH2Server {
        let counter = Counter()
        return try TinyH2Server { _, path, body in
            guard path == "/rpc" else { return (404, [], []) }
            let n = counter.next()
            if n % 5 == 4 {
                let e = #"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"overloaded","data":{"reason":"queue_full","retry_after_ms":20}}}"#
                return (503, [("retry-after", "1"), ("content-type", "application/json")], Array(e.utf8))
            }
            let batch = body.first == UInt8(ascii: "[")
            let one = #"{"jsonrpc":"2.0","id":1,"result":{"model":"m","variant":"\#(n % 2 == 0 ? "m-fp32" : "m-int8")","predictions":[],"timing_ms":{"queue":1.5,"decode":0.5,"inference":3,"total":5},"batch_size":2}}"#
            return (200, [("content-type", "application/json")], Array((batch ? "[\(one),\(one)]" : one).utf8))
        }
    }

    func testClosedLoopSweepCountsVariantsAndErrors() throws {
        let server = try glimpseLike()
        defer { server.stop() }
        let corpus = RequestCorpus.classify(base64Images: ["QUFB"], options: ClassifyOptions())
        let base = LoadConfiguration(port: server.port, connections: 2, duration: 0.4, warmup: 0.1, maxRequests: 400)
        let results = try LoadRunner.sweep(base, modes: [.closed(concurrency: 2), .closed(concurrency: 8)], corpus: corpus)
        XCTAssertEqual(results.count, 2)
        for r in results {
            XCTAssertGreaterThan(r.requests, 10)
            XCTAssertLessThanOrEqual(r.requests, 400)
            XCTAssertEqual(r.requests, r.succeeded + r.errors)
            XCTAssertEqual(r.byStatus["503"], r.byRPCError["-32000 queue_full"])
            XCTAssertEqual(r.byStatus["200"], r.succeeded)
            XCTAssertEqual(Set(r.variants.keys), ["m-fp32", "m-int8"])
            XCTAssertEqual(r.serverQueue.p50, 1.5, accuracy: 0.01)
            XCTAssertEqual(r.serverInference.p99, 3, accuracy: 0.01)
            XCTAssertGreaterThan(r.achievedRate, 0)
        }
    }

    func testConnectionsSpreadOverSeveralLoopThreadsMergeTheirCounts() throws {
        let server = try glimpseLike()
        defer { server.stop() }
        let corpus = RequestCorpus.classify(base64Images: ["QUFB"], options: ClassifyOptions())
        let config = LoadConfiguration(port: server.port, connections: 3, mode: .closed(concurrency: 6), duration: 5, warmup: 0,
                                       maxRequests: 300, threads: 2)
        let r = try LoadRunner.run(config, corpus: corpus)
        XCTAssertEqual(r.requests, 300)
        XCTAssertEqual(r.requests, r.succeeded + r.errors)
        XCTAssertEqual(r.byStatus["503"], r.byRPCError["-32000 queue_full"])
        XCTAssertEqual(r.byStatus["200"], r.succeeded)
        XCTAssertEqual(r.variants.values.reduce(0, +), r.succeeded)
        XCTAssertEqual(r.latency.count, UInt64(r.succeeded))
        XCTAssertEqual(r.timeline.reduce(0) { $0 + $1.count }, UInt64(r.succeeded))
        XCTAssertEqual(r.serverQueue.p50, 1.5, accuracy: 0.01)
    }

    func testMaxRequestsBoundsTheRunAndBatchesCountCalls() throws {
        let server = try glimpseLike()
        defer { server.stop() }
        let corpus = RequestCorpus.classify(base64Images: ["QUFB"], options: ClassifyOptions(rpcBatch: 2))
        let config = LoadConfiguration(port: server.port, connections: 1, mode: .poisson(400), duration: 5, warmup: 0, maxRequests: 50)
        let started = Date()
        let r = try LoadRunner.run(config, corpus: corpus)
        XCTAssertEqual(r.requests, 50)
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
        XCTAssertGreaterThanOrEqual(r.calls, 2 * r.succeeded)
    }

    func testRefusedConnectionIsATypedError() {
        let config = LoadConfiguration(port: 1, connections: 1, mode: .closed(concurrency: 1), duration: 0.1, warmup: 0)
        XCTAssertThrowsError(try LoadRunner.run(config, corpus: .plain(path: "/"))) { error in
            XCTAssertEqual((error as? H2Error)?.kind, .connect)
        }
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value - 1
    }
}
