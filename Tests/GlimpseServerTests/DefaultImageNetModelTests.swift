import Foundation
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// The `imagenet` family shipped in `models/` is what a classify without `model` gets: real photos
/// come back with onnxruntime's answer. The server is the real executable started as
/// `scripts/serve.sh` starts it (no `--default-model`, the repository's model folder).
final class DefaultImageNetModelTests: XCTestCase {
    var repo: URL { URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent() }

    /// The shipped variants and the onnxruntime reference (`reference/predictions.json`) of the same file.
    static let variants = ["mobilenetv2-12-int8": "mobilenetv2-int8", "shufflenet-v2-12-qdq": "shufflenet-v2-qdq",
                           "squeezenet1.1": "squeezenet1.1"]

    /// One server for the tests that use the defaults (starting one calibrates nine models: ~10 s).
    nonisolated(unsafe) static var defaultServer: GlimpseProcess?

    func startDefaultServer() throws -> GlimpseProcess {
        if let server = Self.defaultServer { return server }
        let server = try GlimpseProcess(arguments: ["--models", repo.appendingPathComponent("models").path])
        Self.defaultServer = server
        return server
    }

    override class func tearDown() {
        defaultServer?.stop()
        defaultServer = nil
        super.tearDown()
    }

    func classify(_ server: GlimpseProcess, image: Data, model: String?) throws -> JSONValue {
        var params: [String: JSONValue] = ["image": .string(image.base64EncodedString()), "top_k": 3]
        if let model { params["model"] = .string(model) }
        let call: JSONValue = ["jsonrpc": "2.0", "id": 1, "method": "classify", "params": .object(params)]
        let reply = try ExternalClient.curl(server.base + "/rpc", body: Data(call.serialized()))
        XCTAssertEqual(reply.status, 200)
        return try JSONValue.parse([UInt8](reply.body))
    }

    func testAPhotoWithoutModelIsClassifiedByTheImageNetFamily() throws {
        let server = try startDefaultServer()
        let reply = try classify(server, image: try SharedData.data("images/imagenet/kitten_small.jpg"), model: nil)
        let result = reply["result"]
        XCTAssertEqual(result?["model"]?.stringValue, "imagenet", reply.jsonString)
        XCTAssertEqual(result?["variant"]?.stringValue, "mobilenetv2-12-int8", "the most accurate variant serves without a deadline")
        XCTAssertEqual(result?["reason"]?.stringValue, "most_accurate")
        // ImageNet's domestic cats are classes 281–285 (tabby … Egyptian cat).
        let top1 = result?["predictions"]?[0]?["index"]?.intValue ?? -1
        XCTAssertTrue((281...285).contains(top1), "top-1 \(top1) is not a cat: \(reply.jsonString)")

        // /v1/classify without ?model= answers the same way.
        let rest = try ExternalClient.curl(server.base + "/v1/classify", body: try SharedData.data("images/imagenet/kitten_small.jpg"),
                                           contentType: "image/jpeg")
        XCTAssertEqual(rest.status, 200)
        let restTop1 = try JSONValue.parse([UInt8](rest.body))["predictions"]?[0]?["index"]?.intValue ?? -1
        XCTAssertEqual(restTop1, top1)
    }

    func testUnknownDefaultModelIsAClearError() throws {
        // Two small families (mnist-8 twice), so the server starts at once and no single family stands in.
        let dir = try temporaryFolder("default").url
        for family in ["digits-a", "digits-b"] {
            try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("\(family).onnx").path,
                                                       withDestinationPath: try SharedData.path("models/mnist-8.onnx"))
            try #"{"preprocessing": "mnist"}"#.write(to: dir.appendingPathComponent("\(family).json"), atomically: true, encoding: .utf8)
        }
        let server = try GlimpseProcess(arguments: ["--models", dir.path, "--default-model", "resnet152"])
        defer { server.stop() }
        let reply = try classify(server, image: try SharedData.data("images/imagenet/kitten_small.jpg"), model: nil)
        XCTAssertEqual(reply["error"]?["code"]?.intValue, -32602, reply.jsonString)
        let message = reply["error"]?["message"]?.stringValue ?? ""
        XCTAssertTrue(message.contains("resnet152") && message.contains("digits-a") && message.contains("digits-b"), message)
    }

    /// Every scored JPEG/PNG photo where onnxruntime's top-1 and top-2 are at least 0.1 apart: the
    /// default (the family, no model named) and each shipped variant by name give onnxruntime's top-1.
    func testEveryClearlyDecidedPhotoAgreesWithOnnxruntime() throws {
        let server = try startDefaultServer()
        let predictions = try JSONValue.parse([UInt8](SharedData.data("reference/predictions.json")))
        var report: [String] = []
        for (variant, reference) in Self.variants.sorted(by: { $0.key < $1.key }) {
            guard case .object(let ort)? = predictions["onnxruntime"]?[reference] else { return XCTFail("no reference for \(reference)") }
            // The default serves with the most accurate variant, so it is judged against that one's reference.
            let asked: [String?] = variant == "mobilenetv2-12-int8" ? [nil, variant] : [variant]
            for model in asked {
                var compared = 0, agreed = 0, clear = 0, clearAgreed = 0
                for (file, entry) in ort.sorted(by: { $0.key < $1.key }) {
                    let lower = file.lowercased()
                    guard lower.hasSuffix(".jpg") || lower.hasSuffix(".jpeg") || lower.hasSuffix(".png") else { continue }
                    if predictions["expected"]?[file]?["score"] == .bool(false) { continue }
                    guard case .array(let top5)? = entry["top5"], case .array(let scores)? = entry["scores"], scores.count >= 2,
                          let expected = top5.first?.intValue, let s1 = scores[0].doubleValue, let s2 = scores[1].doubleValue else { continue }
                    let reply = try classify(server, image: try SharedData.data(file), model: model)
                    let got = reply["result"]?["predictions"]?[0]?["index"]?.intValue
                    if model == nil { XCTAssertEqual(reply["result"]?["variant"]?.stringValue, variant, file) }
                    compared += 1
                    if got == expected { agreed += 1 }
                    if s1 - s2 >= 0.1 {
                        clear += 1
                        if got == expected { clearAgreed += 1 }
                        XCTAssertEqual(got, expected, "\(model ?? "default") \(file): \(reply.jsonString)")
                    }
                }
                XCTAssertGreaterThanOrEqual(clear, 8, "too few clearly decided photos for \(variant)")
                report.append("\(model ?? "default (\(variant))"): top-1 equal to onnxruntime on \(agreed)/\(compared) photos, \(clearAgreed)/\(clear) with a top-2 margin >= 0.1")
            }
        }
        print("imagenet agreement with onnxruntime:\n  " + report.joined(separator: "\n  "))
    }
}
