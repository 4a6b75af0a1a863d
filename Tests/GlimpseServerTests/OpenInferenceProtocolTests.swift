import Foundation
import GlimpseImage
import GlimpseRPC
import GlimpseServing
import GlimpseTestSupport
import XCTest

/// The Open Inference Protocol (KServe v2) on the real `glimpse` executable, with clients we did not
/// write: curl over h2c and HTTP/1.1, and NVIDIA's `tritonclient.http` (installed from PyPI into
/// `.build/tritonclient-venv` by `scripts/setup.sh --test`). Each v2 answer is compared with what
/// `classify` says of the same photo.
final class OpenInferenceProtocolTests: XCTestCase {
    nonisolated(unsafe) static var server: GlimpseProcess?
    /// Why the server did not start (GlimpseProcess's error carries its log), thrown by each test.
    nonisolated(unsafe) static var startError: (any Error)?
    static let model = "squeezenet1.1"
    static let photo = "images/imagenet/dog_torchserve.jpg"

    override class func setUp() {
        super.setUp()
        do {
            server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder()])
        } catch {
            startError = error
        }
    }

    override class func tearDown() {
        server?.stop()
        server = nil
        startError = nil
        super.tearDown()
    }

    func live() throws -> GlimpseProcess {
        guard let server = Self.server else { throw Self.startError ?? TestServerError(description: "the glimpse executable did not start") }
        return server
    }

    func testHealthAndMetadata() throws {
        let server = try live()
        for path in ["/v2/health/live", "/v2/health/ready", "/v2/models/\(Self.model)/ready", "/v2/models/\(Self.model)/versions/1/ready"] {
            XCTAssertEqual(try ExternalClient.curl(server.base + path).status, 200, path)
        }
        let meta = try JSONValue.parse([UInt8](try ExternalClient.curl(server.base + "/v2").body))
        XCTAssertEqual(meta["name"], "glimpse")
        XCTAssertEqual(meta["extensions"], ["binary_tensor_data", "classification"])

        let reply = try ExternalClient.curl(server.base + "/v2/models/\(Self.model)", http2: false)
        XCTAssertEqual(reply.status, 200)
        let model = try JSONValue.parse([UInt8](reply.body))
        XCTAssertEqual(model["name"]?.stringValue, Self.model)
        XCTAssertEqual(model["versions"], ["1"])
        XCTAssertEqual(model["inputs"]?[0]?["datatype"], "FP32")
        XCTAssertEqual(model["inputs"]?[0]?["shape"], [-1, 3, 224, 224])
        XCTAssertEqual(model["inputs"]?[1]?["datatype"], "BYTES")
        XCTAssertEqual(model["outputs"]?[0]?["datatype"], "FP32")
        XCTAssertEqual(model["outputs"]?[0]?["shape"]?[0], -1)

        for path in ["/v2/models/no-such-model", "/v2/models/\(Self.model)/versions/9", "/v2/models/no-such-model/ready"] {
            let missing = try ExternalClient.curl(server.base + path)
            XCTAssertEqual(missing.status, 404, path)
            XCTAssertNotNil(try JSONValue.parse([UInt8](missing.body))["error"]?.stringValue, path)
        }
    }

    /// JSON infer with curl over h2c and HTTP/1.1: the classification extension gives classify's top 5, and a
    /// family name answers with the variant that served.
    func testJSONInferWithCurlMatchesClassify() throws {
        let server = try live()
        let image = try SharedData.data(Self.photo)
        let output = try outputName(server, model: Self.model)
        let reply = try ExternalClient.curl(server.base + "/v2/models/\(Self.model)/infer",
                                            body: OIP.jsonInferBody(image: image, output: output, classes: 5))
        XCTAssertEqual(reply.status, 200, String(decoding: reply.body, as: UTF8.self))
        XCTAssertEqual(reply.httpVersion, "2")
        let json = try JSONValue.parse([UInt8](reply.body))
        XCTAssertEqual(json["model_name"]?.stringValue, Self.model)
        XCTAssertEqual(json["model_version"], "1")
        XCTAssertEqual(json["id"], "curl-1")
        XCTAssertEqual(json["outputs"]?[0]?["datatype"], "BYTES")
        XCTAssertEqual(json["outputs"]?[0]?["shape"], [1, 5])
        guard case .array(let elements)? = json["outputs"]?[0]?["data"] else { return XCTFail("no data: \(json)") }
        let expected = try OIP.classify(base: server.base, image: image, model: Self.model)
        OIP.assertSameClasses(OIP.classes(elements), expected, "v2 infer vs classify")

        let http1 = try ExternalClient.curl(server.base + "/v2/models/\(Self.model)/infer",
                                            body: OIP.jsonInferBody(image: image, output: output, classes: 5), http2: false)
        XCTAssertEqual(http1.httpVersion, "1.1")
        guard case .array(let elements1)? = try JSONValue.parse([UInt8](http1.body))["outputs"]?[0]?["data"] else {
            return XCTFail("no data over HTTP/1.1: \(String(decoding: http1.body, as: UTF8.self))")
        }
        OIP.assertSameClasses(OIP.classes(elements1), expected, "v2 infer over HTTP/1.1 vs classify")

        let familyOutput = try outputName(server, model: "mobilenetv2")
        let family = try ExternalClient.curl(server.base + "/v2/models/mobilenetv2/infer",
                                             body: OIP.jsonInferBody(image: image, output: familyOutput, classes: 1))
        XCTAssertEqual(family.status, 200, String(decoding: family.body, as: UTF8.self))
        XCTAssertEqual(try JSONValue.parse([UInt8](family.body))["model_name"], "mobilenetv2-int8")
    }

    func testErrorsFollowTheProtocol() throws {
        let server = try live()
        let image = try SharedData.data(Self.photo)
        let unmarked = try ExternalClient.curl(server.base + "/v2/models/\(Self.model)/infer",
                                               body: OIP.jsonInferBody(image: image, output: "x", classes: 5, marked: false))
        XCTAssertEqual(unmarked.status, 400)
        let message = try JSONValue.parse([UInt8](unmarked.body))["error"]?.stringValue ?? ""
        XCTAssertTrue(message.contains("content_type"), message)
        let unknown = try ExternalClient.curl(server.base + "/v2/models/no-such-model/infer",
                                              body: OIP.jsonInferBody(image: image, output: "x", classes: 5))
        XCTAssertEqual(unknown.status, 404)
        let garbage = try ExternalClient.curl(server.base + "/v2/models/\(Self.model)/infer", body: Data("{\"inputs\": 3".utf8))
        XCTAssertEqual(garbage.status, 400)
        let wrongShape: JSONValue = ["inputs": [["name": "data", "datatype": "FP32", "shape": [1, 2], "data": [0.5, 1]]]]
        let shape = try ExternalClient.curl(server.base + "/v2/models/\(Self.model)/infer", body: Data(wrongShape.serialized()))
        XCTAssertEqual(shape.status, 400, String(decoding: shape.body, as: UTF8.self))
        let metrics = String(decoding: try ExternalClient.curl(server.base + "/metrics", http2: false).body, as: UTF8.self)
        XCTAssertTrue(metrics.contains(#"method="v2.infer""#), "v2 infer is missing from the request metrics")
    }

    /// A request refused for overload keeps `Retry-After`, with the protocol's error body.
    func testOverloadIsA503WithRetryAfter() async throws {
        let server = try await TestServer.start(serving: ServingConfiguration(maxInflightImages: 1))
        let image = try SharedData.data(Self.photo).base64EncodedString()
        let body: JSONValue = ["inputs": [["name": "image", "datatype": "BYTES", "shape": [2], "data": [.string(image), .string(image)],
                                           "parameters": ["content_type": "base64"]]]]
        let reply = try ExternalClient.curl(server.base + "/v2/models/\(Self.model)/infer", body: Data(body.serialized()))
        XCTAssertEqual(reply.status, 503, String(decoding: reply.body, as: UTF8.self))
        XCTAssertTrue(reply.headers.lowercased().contains("retry-after: 1"), reply.headers)
        XCTAssertNotNil(try JSONValue.parse([UInt8](reply.body))["error"]?.stringValue)
    }

    /// tritonclient.http: health, metadata, BYTES in binary and JSON with class_count=5, the FP32
    /// output tensor, a preprocessed FP32 tensor, and its errors; every top-5 as classify's.
    func testTritonClient() throws {
        let server = try live()
        let python = SharedData.repoRoot.appendingPathComponent(".build/tritonclient-venv/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            return XCTFail("tritonclient is not installed: run scripts/setup.sh --test (it makes .build/tritonclient-venv)")
        }
        let script = SharedData.repoRoot.appendingPathComponent("tools/oip/tritonclient_check.py").path
        let image = try SharedData.data(Self.photo)
        let tensorFile = FileManager.default.temporaryDirectory.appendingPathComponent("glimpse-oip-\(UUID().uuidString).f32")
        defer { try? FileManager.default.removeItem(at: tensorFile) }
        try preprocessed(image).write(to: tensorFile)
        let imageFile = try SharedData.path(Self.photo)
        let out = try ExternalClient.run(python, [script, "127.0.0.1:\(server.port)", Self.model, imageFile, tensorFile.path])
        let report = try JSONValue.parse([UInt8](out))
        XCTAssertEqual(report["live"], true)
        XCTAssertEqual(report["ready"], true)
        XCTAssertEqual(report["model_ready"], true)
        XCTAssertEqual(report["metadata"]?["name"]?.stringValue, Self.model)
        XCTAssertEqual(report["binary"]?["model_name"]?.stringValue, Self.model)
        XCTAssertEqual(report["binary"]?["id"], "binary-1")
        let expected = try OIP.classify(base: server.base, image: image, model: Self.model)
        for mode in ["binary", "json", "tensor"] {
            OIP.assertSameClasses(tritonClasses(report[mode]?["classes"]), expected, "tritonclient \(mode) vs classify")
        }
        XCTAssertEqual(tritonClasses(report["tensor_json"]?["classes"]).first?.index, expected.first?.index)
        XCTAssertEqual(report["scores"]?["shape"], [1, 1000])
        XCTAssertEqual(report["scores"]?["dtype"], "float32")
        XCTAssertEqual(report["scores"]?["argmax"]?.intValue, expected.first?.index)
        XCTAssertEqual(report["unmarked_json"]?["status"], "400")
        XCTAssertEqual(report["unknown_model"]?["status"], "404")
    }

    func tritonClasses(_ value: JSONValue?) -> [(index: Int, score: Double)] {
        guard case .array(let items)? = value else { return [] }
        return items.compactMap { c in c["index"]?.intValue.flatMap { i in c["score"]?.doubleValue.map { (i, $0) } } }
    }

    func outputName(_ server: GlimpseProcess, model: String) throws -> String {
        let meta = try JSONValue.parse([UInt8](try ExternalClient.curl(server.base + "/v2/models/\(model)").body))
        guard let name = meta["outputs"]?[0]?["name"]?.stringValue else { throw TestServerError(description: "no output in \(meta)") }
        return name
    }

    /// The photo as squeezenet's input, preprocessed as the server does, in little-endian float32.
    func preprocessed(_ image: Data) throws -> Data {
        guard let spec = PreprocessingPreset.named("imagenet") else { throw TestServerError(description: "no imagenet preset") }
        var values = [Float](repeating: 0, count: 3 * 224 * 224)
        _ = try image.withUnsafeBytes { raw in
            try values.withUnsafeMutableBytes { out in
                guard let base = out.baseAddress else { throw TestServerError(description: "no tensor memory") }
                return try ImagePipeline.preprocess(raw, spec: spec, into: base)
            }
        }
        return values.withUnsafeBytes { Data($0) }
    }
}
