import Foundation
import GlimpseLoad
import GlimpseTestSupport
import XCTest

/// Bounds of the options the command line passes in, and the request bodies they produce.
final class LoadPlanTests: XCTestCase {
    private func plan(_ base: LoadConfiguration = LoadConfiguration(), concurrency: [Int] = [1], rates: [Double] = [],
                      source: LoadPlan.Source = .plain(method: "GET"), path: String = "/healthz") throws -> LoadPlan {
        try LoadPlan.make(base: base, concurrency: concurrency, rates: rates, poisson: false, source: source, path: path)
    }

    func testRejectsOutOfBoundValues() {
        var c = LoadConfiguration()
        c.port = 0
        XCTAssertThrowsError(try plan(c))
        c = LoadConfiguration(connections: 0)
        XCTAssertThrowsError(try plan(c))
        c = LoadConfiguration(connections: 4)
        XCTAssertThrowsError(try plan(c, concurrency: [2]))  // fewer streams than connections
        c = LoadConfiguration(duration: 0)
        XCTAssertThrowsError(try plan(c))
        c = LoadConfiguration(duration: .infinity)
        XCTAssertThrowsError(try plan(c))
        c = LoadConfiguration(warmup: -1)
        XCTAssertThrowsError(try plan(c))
        c = LoadConfiguration(maxRequests: 0)
        XCTAssertThrowsError(try plan(c))
        XCTAssertThrowsError(try plan(rates: [0]))
        XCTAssertThrowsError(try plan(rates: [.nan]))
        XCTAssertThrowsError(try plan(concurrency: []))
        XCTAssertThrowsError(try plan(path: "healthz"))
        XCTAssertThrowsError(try plan(concurrency: Array(1...65)))
        XCTAssertThrowsError(try plan(source: .bodyFile("/nonexistent/body.json")))
        XCTAssertThrowsError(try plan(source: .images("/nonexistent", ClassifyOptions())))
        XCTAssertThrowsError(try ClassifyOptions(topK: 0).validate())
        XCTAssertThrowsError(try ClassifyOptions(crop: "zoom").validate())
        XCTAssertThrowsError(try ClassifyOptions(deadlineMs: 0).validate())
        XCTAssertThrowsError(try ClassifyOptions(imagesPerCall: 0).validate())
        XCTAssertThrowsError(try ClassifyOptions(rpcBatch: 257).validate())
    }

    func testListsAndRanges() throws {
        XCTAssertEqual(try LoadPlan.parseIntegers("1,2, 8"), [1, 2, 8])
        XCTAssertEqual(try LoadPlan.parseIntegers("1-20"), [1, 2, 4, 8, 16, 20])
        XCTAssertThrowsError(try LoadPlan.parseIntegers("a,2"))
        XCTAssertThrowsError(try LoadPlan.parseIntegers("8-2"))
        XCTAssertEqual(try LoadPlan.parseRates("10,2.5"), [10, 2.5])
        XCTAssertThrowsError(try LoadPlan.parseRates("fast"))
        let sweep = try plan(concurrency: [1, 4, 16])
        XCTAssertEqual(sweep.modes, [.closed(concurrency: 1), .closed(concurrency: 4), .closed(concurrency: 16)])
        XCTAssertEqual(try plan(rates: [50]).modes, [.constantRate(50)])
    }

    func testClosedLoopConcurrencyIsSpreadOverConnections() {
        let c = LoadConfiguration(connections: 3, mode: .closed(concurrency: 10))
        XCTAssertEqual((0..<3).map(c.concurrency(ofConnection:)), [4, 3, 3])
    }

    func testClassifyBodies() throws {
        let images = ["QUFB", "QkJC", "Q0ND"]
        let single = RequestCorpus.classify(base64Images: images, options: ClassifyOptions(model: "mnist-8", topK: 3, deadlineMs: 250))
        XCTAssertEqual(single.bodies.count, 3)
        let first = try JSONSerialization.jsonObject(with: Data(single.bodies[0])) as? [String: Any]
        let params = first?["params"] as? [String: Any]
        XCTAssertEqual(first?["method"] as? String, "classify")
        XCTAssertEqual(params?["image"] as? String, "QUFB")
        XCTAssertEqual(params?["model"] as? String, "mnist-8")
        XCTAssertEqual(params?["top_k"] as? Int, 3)
        XCTAssertEqual(params?["deadline_ms"] as? Int, 250)
        XCTAssertEqual(params?["crop"] as? String, "center")

        let batched = RequestCorpus.classify(base64Images: images, options: ClassifyOptions(model: "m\"x", imagesPerCall: 2, rpcBatch: 3))
        let array = try JSONSerialization.jsonObject(with: Data(batched.bodies[0])) as? [[String: Any]]
        XCTAssertEqual(array?.count, 3)
        XCTAssertEqual(array?.map { $0["id"] as? Int }, [1, 2, 3])
        let p = array?[1]["params"] as? [String: Any]
        XCTAssertEqual(p?["images"] as? [String], ["Q0ND", "QUFB"])
        XCTAssertEqual(p?["model"] as? String, "m\"x")
        XCTAssertEqual(batched.callsPerRequest, 3)
    }

    func testImageFolderIsEncodedOnce() throws {
        let dir = try temporaryFolder("imgs").url
        try Data([0xFF, 0xD8, 0xFF]).write(to: dir.appendingPathComponent("a.jpg"))
        try Data([0x89, 0x50]).write(to: dir.appendingPathComponent("b.PNG"))
        try Data("x".utf8).write(to: dir.appendingPathComponent("notes.txt"))
        let corpus = try RequestCorpus.classify(imagesIn: dir, options: ClassifyOptions())
        XCTAssertEqual(corpus.bodies.count, 2)
        XCTAssertTrue(String(decoding: corpus.bodies[0], as: UTF8.self).contains("\"image\":\"/9j/\""))
        XCTAssertEqual(corpus.request(3, authority: "h").body, corpus.bodies[1])
    }
}
