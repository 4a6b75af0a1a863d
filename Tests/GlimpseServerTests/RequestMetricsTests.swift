import Foundation
import GlimpseRPC
import GlimpseServer
import GlimpseServing
import GlimpseTestSupport
import MetricsTestKit
import XCTest

/// `glimpse_requests_total` and the serving metrics of a classify, recorded into a `MetricsTestKit`
/// backend injected into the service, through the dispatcher the server uses (no sockets).
final class RequestMetricsTests: XCTestCase {
    var folder: TemporaryFolder!
    var metrics: TestMetrics!
    var service: InferenceService!
    var dispatcher: RPCDispatcher!

    override func setUpWithError() throws {
        folder = try temporaryFolder("request-metrics")
        try FileManager.default.createSymbolicLink(atPath: folder.appending("mnist-8.onnx").path,
                                                   withDestinationPath: try SharedData.path("models/mnist-8.onnx"))
        try #"{"preprocessing": "mnist"}"#.write(to: folder.appending("mnist-8.json"), atomically: true, encoding: .utf8)
        metrics = TestMetrics()
        service = InferenceService(configuration: .init(decodeThreads: 1, engineThreads: 1), metrics: MetricHandles(factory: metrics))
        _ = try service.registry.load(named: "mnist-8", directory: folder.path)
        dispatcher = GlimpseServer.makeDispatcher(service: service, configuration: ServerConfiguration(port: 0))
    }

    override func tearDownWithError() throws {
        service.shutdown()
    }

    func call(_ method: String, _ params: JSONValue) async throws -> JSONValue {
        let body: JSONValue = ["jsonrpc": "2.0", "id": 1, "method": .string(method), "params": params]
        let reply = await dispatcher.handle(body: body.serialized())
        return try JSONValue.parse(reply.body)
    }

    func requests(_ method: String, model: String, variant: String, outcome: String, reason: String) throws -> Int64 {
        try metrics.expectCounter(GlimpseMetrics.requests, [
            ("method", method), ("model", model), ("variant", variant), ("outcome", outcome), ("reason", reason),
        ]).totalValue
    }

    func testClassifyIsCountedWithTheVariantThatServed() async throws {
        let image = try SharedData.data("images/digits/torchserve_7.png")
        let reply = try await call("classify", ["image": .string(image.base64EncodedString()), "model": "mnist-8"])
        let family = try XCTUnwrap(reply["result"]?["model"]?.stringValue)
        let variant = try XCTUnwrap(reply["result"]?["variant"]?.stringValue)
        XCTAssertEqual(try requests("classify", model: family, variant: variant, outcome: "ok", reason: ""), 1)

        // The serving side of the same request: the load, the batch it ran in and its stages. A batch's
        // metrics are recorded before its callers resume, so they are there when the reply is.
        XCTAssertEqual(try metrics.expectCounter(GlimpseMetrics.modelLoads, [("model", "mnist-8"), ("outcome", "loaded")]).totalValue, 1)
        let sizes = try metrics.expectRecorder(GlimpseMetrics.batchSize, [("model", "mnist-8")]).values
        XCTAssertFalse(sizes.isEmpty)
        XCTAssertTrue(sizes.allSatisfy { $0 >= 1 }, "\(sizes)")
        XCTAssertGreaterThanOrEqual(try metrics.expectCounter(GlimpseMetrics.batches, [("model", "mnist-8"), ("variant", variant)]).totalValue, 1)
        let depths = try metrics.expectGauge(GlimpseMetrics.queueDepth, [("model", "mnist-8")]).values
        XCTAssertFalse(depths.isEmpty)
        XCTAssertTrue(depths.allSatisfy { $0 >= 0 && $0 <= 1 }, "\(depths)")
        for stage in ["decode", "queue", "inference", "total"] {
            XCTAssertEqual(try metrics.expectTimer(GlimpseMetrics.stageSeconds, [("stage", stage), ("model", "mnist-8")]).values.count, 1, stage)
        }
    }

    func testErrorsAreCountedWithBoundedLabels() async throws {
        let unknown = try await call("no.such.method", [:])
        XCTAssertEqual(unknown["error"]?["code"]?.intValue, -32601)
        XCTAssertEqual(try requests("unknown", model: "", variant: "", outcome: "error", reason: "-32601"), 1)

        // A model that is not loaded is labelled "unknown", not with the name the client sent.
        let image = try SharedData.data("images/digits/torchserve_7.png")
        let missing = try await call("classify", ["image": .string(image.base64EncodedString()), "model": "no-such-model"])
        let error = try XCTUnwrap(missing["error"])
        let reason = error["data"]?["reason"]?.stringValue ?? String(error["code"]?.intValue ?? 0)
        XCTAssertEqual(try requests("classify", model: "unknown", variant: "", outcome: "error", reason: reason), 1)
    }
}
