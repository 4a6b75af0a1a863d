import Foundation
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// Every JSON-RPC error code provoked over a real HTTP/2 connection, each followed by a good request.
final class ErrorCodesOverHTTP2Tests: XCTestCase {
    func assertStillServes(_ server: TestServer, file: StaticString = #filePath, line: UInt = #line) throws {
        let image = try SharedData.data("images/digits/torchserve_7.png")
        let (_, json) = try RPC.post(server, RPC.classifyBody(image: image, model: "mnist-8"))
        XCTAssertEqual(RPC.top1(json, file: file, line: line), 7, "the next good request must succeed", file: file, line: line)
    }

    func expectError(_ server: TestServer, _ body: String, code: Int, reason: String? = nil, messageContains: String? = nil,
                     file: StaticString = #filePath, line: UInt = #line) throws {
        let (reply, json) = try RPC.post(server, body)
        XCTAssertEqual(reply.status, 200, file: file, line: line)
        XCTAssertEqual(json?["error"]?["code"], .int(code), "body: \(json?.jsonString ?? "nil")", file: file, line: line)
        if let reason {
            XCTAssertEqual(json?["error"]?["data"]?["reason"]?.stringValue, reason, file: file, line: line)
        }
        if let messageContains {
            XCTAssertTrue(json?["error"]?["message"]?.stringValue?.contains(messageContains) ?? false,
                          "message should mention \(messageContains): \(json?.jsonString ?? "")", file: file, line: line)
        }
        try assertStillServes(server, file: file, line: line)
    }

    func testMalformedJSON() async throws {
        let server = try await TestServer.shared.value
        try expectError(server, #"{"jsonrpc": "2.0", "method": "classify", "#, code: -32700)
    }

    func testInvalidRequest() async throws {
        let server = try await TestServer.shared.value
        try expectError(server, #"{"jsonrpc": "1.0", "method": "classify", "id": 1}"#, code: -32600)
    }

    func testUnknownMethod() async throws {
        let server = try await TestServer.shared.value
        try expectError(server, #"{"jsonrpc": "2.0", "method": "clasify", "id": 1}"#, code: -32601, messageContains: "clasify")
    }

    func testBadBase64() async throws {
        let server = try await TestServer.shared.value
        try expectError(server, #"{"jsonrpc": "2.0", "method": "classify", "id": 1, "params": {"image": "%%%not base64%%%", "model": "mnist-8"}}"#,
                        code: -32602, reason: "bad_base64")
    }

    func testTruncatedJPEG() async throws {
        let server = try await TestServer.shared.value
        let jpeg = try SharedData.data("images/imagenet/kitten_small.jpg")
        let truncated = jpeg.prefix(jpeg.count / 3).base64EncodedString()
        try expectError(server, #"{"jsonrpc": "2.0", "method": "classify", "id": 1, "params": {"image": "\#(truncated)", "model": "squeezenet1.1"}}"#,
                        code: -32602, reason: "corrupt_image")
    }

    func testUnknownModel() async throws {
        let server = try await TestServer.shared.value
        let png = try SharedData.data("images/digits/torchserve_1.png").base64EncodedString()
        try expectError(server, #"{"jsonrpc": "2.0", "method": "classify", "id": 1, "params": {"image": "\#(png)", "model": "resnet9000"}}"#,
                        code: -32602, reason: "unknown_model", messageContains: "resnet9000")
    }

    func testUnsupportedFormatAndBadParams() async throws {
        let server = try await TestServer.shared.value
        let bmp = try SharedData.data("images/digits/coral_9.bmp").base64EncodedString()
        try expectError(server, #"{"jsonrpc": "2.0", "method": "classify", "id": 1, "params": {"image": "\#(bmp)", "model": "mnist-8"}}"#,
                        code: -32602, reason: "unsupported_format")
        try expectError(server, #"{"jsonrpc": "2.0", "method": "classify", "id": 1, "params": {"model": "mnist-8"}}"#, code: -32602)
        try expectError(server, #"{"jsonrpc": "2.0", "method": "classify", "id": 1, "params": {"image": "AAAA", "model": "mnist-8", "top_k": 0}}"#, code: -32602)
    }

    func testOversizedBodyIsRefusedWhileStreaming() async throws {
        let server = try await TestServer.shared.value
        let big = Data(repeating: UInt8(ascii: " "), count: 5 << 20)
        let reply = try ExternalClient.curl(server.base + "/rpc", body: big)
        XCTAssertEqual(reply.status, 413)
        try assertStillServes(server)
    }
}
