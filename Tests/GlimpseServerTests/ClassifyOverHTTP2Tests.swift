import Foundation
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// classify end to end: a real server on loopback, real clients (curl, nghttp), real models and photos.
final class ClassifyOverHTTP2Tests: XCTestCase {
    func testDigitsAreRecognizedOverH2C() async throws {
        let server = try await TestServer.shared.value
        var correct = 0
        for digit in 0...9 {
            let image = try SharedData.data("images/digits/torchserve_\(digit).png")
            let (reply, json) = try RPC.post(server, RPC.classifyBody(image: image, model: "mnist-8"))
            XCTAssertEqual(reply.status, 200)
            XCTAssertEqual(reply.httpVersion, "2", "curl must have spoken HTTP/2")
            XCTAssertEqual(json?["result"]?["model"], "mnist-8")
            if RPC.top1(json) == digit { correct += 1 }
        }
        XCTAssertEqual(correct, 10, "every torchserve digit must be recognized")
    }

    func testPhotosMatchOnnxruntimeTop1() async throws {
        let server = try await TestServer.shared.value
        let predictions = try JSONValue.parse([UInt8](SharedData.data("reference/predictions.json")))
        guard case .object(let ort)? = predictions["onnxruntime"]?["squeezenet1.1"] else { return XCTFail("no reference") }
        var compared = 0
        for (file, entry) in ort.sorted(by: { $0.key < $1.key }) {
            guard file.hasSuffix(".jpg") || file.hasSuffix(".jpeg") || file.hasSuffix(".png") else { continue }
            guard case .array(let top5)? = entry["top5"], case .array(let scores)? = entry["scores"],
                  let expected = top5.first?.intValue, let s1 = scores[0].doubleValue, let s2 = scores[1].doubleValue else { continue }
            guard s1 - s2 >= 0.1 else { continue }  // only where onnxruntime is clearly decided
            let image = try SharedData.data(file)
            let (reply, json) = try RPC.post(server, RPC.classifyBody(image: image, model: "squeezenet1.1"))
            XCTAssertEqual(reply.status, 200, file)
            XCTAssertEqual(RPC.top1(json), expected, "\(file): onnxruntime says \(expected)")
            compared += 1
        }
        XCTAssertGreaterThanOrEqual(compared, 5)
    }

    func testKittenWithCurlReturnsLabelsAndTiming() async throws {
        let server = try await TestServer.shared.value
        let image = try SharedData.data("images/imagenet/kitten_small.jpg")
        let (reply, json) = try RPC.post(server, RPC.classifyBody(image: image, model: "squeezenet1.1", topK: 3))
        XCTAssertEqual(reply.status, 200)
        let result = json?["result"]
        guard case .array(let predictions)? = result?["predictions"] else { return XCTFail("no predictions") }
        XCTAssertEqual(predictions.count, 3)
        XCTAssertEqual(predictions[0]["label"]?.stringValue?.isEmpty, false)
        let scores = predictions.compactMap { $0["score"]?.doubleValue }
        XCTAssertEqual(scores, scores.sorted(by: >))
        for stage in ["decode", "inference", "total"] {
            XCTAssertNotNil(result?["timing_ms"]?[stage]?.doubleValue, stage)
        }
    }

    func testNghttpClientAndHTTP1OnTheSamePort() async throws {
        let server = try await TestServer.shared.value
        let image = try SharedData.data("images/digits/torchserve_3.png")
        let body = RPC.classifyBody(image: image, model: "mnist-8", id: "n")
        let out = try ExternalClient.nghttp(server.base + "/rpc", body: body)
        let json = try JSONValue.parse([UInt8](out))
        XCTAssertEqual(json["id"], "n")
        XCTAssertEqual(RPC.top1(json), 3)

        let (reply, json1) = try RPC.post(server, body, http2: false)
        XCTAssertEqual(reply.httpVersion, "1.1")
        XCTAssertEqual(RPC.top1(json1), 3)

        let health = try ExternalClient.curl(server.base + "/healthz", http2: false)
        XCTAssertEqual(health.status, 200)
        let health2 = try ExternalClient.curl(server.base + "/healthz")
        XCTAssertEqual(health2.status, 200)
        XCTAssertEqual(health2.httpVersion, "2")
    }

    func testRESTClassifyWithRawBody() async throws {
        let server = try await TestServer.shared.value
        let image = try SharedData.data("images/digits/torchserve_5.png")
        let reply = try ExternalClient.curl(server.base + "/v1/classify?model=mnist-8&top_k=2", body: image, contentType: "image/png")
        XCTAssertEqual(reply.status, 200)
        let json = try JSONValue.parse([UInt8](reply.body))
        guard case .array(let p)? = json["predictions"] else { return XCTFail("no predictions") }
        XCTAssertEqual(p.count, 2)
        XCTAssertEqual(p[0]["index"], 5)
    }

    func testBatchArrayOverHTTP2() async throws {
        let server = try await TestServer.shared.value
        let two = try SharedData.data("images/digits/torchserve_2.png").base64EncodedString()
        let text = """
        [{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\(two)","model":"mnist-8"}},
         {"jsonrpc":"2.0","method":"health"},
         {"jsonrpc":"2.0","id":"h","method":"health"}]
        """
        let (reply, json) = try RPC.post(server, text)
        XCTAssertEqual(reply.status, 200)
        guard case .array(let items)? = json else { return XCTFail("expected array") }
        XCTAssertEqual(items.count, 2)
        XCTAssertEqual(items[0]["id"], 1)
        XCTAssertEqual(RPC.top1(items[0]), 2)
        XCTAssertEqual(items[1]["result"]?["status"], "ok")

        let (reply2, json2) = try RPC.post(server, #"[{"jsonrpc":"2.0","method":"health"},{"jsonrpc":"2.0","method":"health"}]"#)
        XCTAssertNil(json2)
        XCTAssertTrue(reply2.body.isEmpty)
    }
}
