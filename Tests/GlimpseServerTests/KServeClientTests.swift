import Foundation
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// The Open Inference Protocol on the real `glimpse` executable with KServe's own Python client,
/// `InferenceRESTClient(RESTConfig(protocol="v2"))` (installed from PyPI into `.build/kserve-venv` by
/// `scripts/setup.sh --test`), over HTTP/1.1 and over h2c. Its answers are compared with `classify`'s.
final class KServeClientTests: XCTestCase {
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

    func testKServeClientOverHTTP1() throws {
        try check(transport: "http1", version: "HTTP/1.1")
    }

    /// httpx speaks h2c only with a transport built `http1=False, http2=True`; `RESTConfig(http2=True)`
    /// alone stays on HTTP/1.1 for an http:// URL (HTTP/2 is negotiated by ALPN over TLS).
    func testKServeClientOverH2C() throws {
        try check(transport: "h2c", version: "HTTP/2")
    }

    /// Health, readiness, metadata, a base64 BYTES image in JSON with and without the classification
    /// extension, the same image with the binary data extension, and a 404 for an unknown model.
    func check(transport: String, version: String) throws {
        guard let server = Self.server else { throw Self.startError ?? TestServerError(description: "the glimpse executable did not start") }
        let python = SharedData.repoRoot.appendingPathComponent(".build/kserve-venv/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            return XCTFail("kserve is not installed: run scripts/setup.sh --test (it makes .build/kserve-venv)")
        }
        let script = SharedData.repoRoot.appendingPathComponent("tools/oip/kserve_check.py").path
        let image = try SharedData.data(Self.photo)
        let out = try ExternalClient.run(python, [script, server.base, Self.model, try SharedData.path(Self.photo), transport])
        let report = try JSONValue.parse([UInt8](out))
        XCTAssertEqual(report["live"], true)
        XCTAssertEqual(report["ready"], true)
        XCTAssertEqual(report["model_ready"], true)
        XCTAssertEqual(report["unknown_model_ready"], false)
        XCTAssertEqual(report["metadata"]?["name"]?.stringValue, Self.model)
        XCTAssertEqual(report["metadata"]?["inputs"]?[1]?["datatype"], "BYTES")
        XCTAssertEqual(report["http_versions"], [.string(version)])

        let expected = try OIP.classify(base: server.base, image: image, model: Self.model)
        XCTAssertEqual(report["classified"]?["model_name"]?.stringValue, Self.model)
        XCTAssertEqual(report["classified"]?["id"], "kserve-1")
        OIP.assertSameClasses(classes(report["classified"]?["classes"]), expected, "kserve JSON + classification vs classify")
        XCTAssertEqual(report["scores"]?["shape"], [1, 1000])
        XCTAssertEqual(report["scores"]?["datatype"], "FP32")
        XCTAssertEqual(report["scores"]?["argmax"]?.intValue, expected.first?.index, "kserve JSON scores' top-1 vs classify")
        XCTAssertEqual(classes(report["binary"]?["classes"]).map(\.index), expected.prefix(1).map(\.index))
        XCTAssertEqual(report["unknown_model"]?["status"], 404)
    }

    func classes(_ value: JSONValue?) -> [(index: Int, score: Double)] {
        guard case .array(let items)? = value else { return [] }
        return items.compactMap { c in c["index"]?.intValue.flatMap { i in c["score"]?.doubleValue.map { (i, $0) } } }
    }
}
