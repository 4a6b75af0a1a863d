import Foundation
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// Every HTTP/2 transport answers the same requests with curl and nghttp: the frame responder (the
/// default), one child channel per stream (`--http2-stream-channels`, kept for comparison) and
/// libnghttp2 (`--http2-transport nghttp2`).
final class HTTP2TransportTests: XCTestCase {
    func check(_ arguments: [String]) throws {
        let server = try GlimpseProcess(arguments: ["--models", try mnistOnlyFolder("transport")] + arguments)
        defer { server.stop() }
        let health = try ExternalClient.curl(server.base + "/healthz")
        XCTAssertEqual(health.status, 200, "\(arguments)")
        XCTAssertEqual(health.httpVersion, "2")
        XCTAssertEqual(try JSONValue.parse([UInt8](health.body))["status"]?.stringValue, "ok")
        let headers = health.headers.lowercased()
        XCTAssertTrue(headers.contains("content-type: application/json"), health.headers)
        XCTAssertTrue(headers.contains("date: "), "origin servers send a date (RFC 9110 §6.6.1): \(health.headers)")

        let image = try SharedData.data("images/digits/torchserve_7.png")
        let body = RPC.classifyBody(image: image, model: "mnist-8")
        let reply = try JSONValue.parse([UInt8](try ExternalClient.nghttp(server.base + "/rpc", body: body)))
        XCTAssertEqual(RPC.top1(reply), 7, "\(arguments): \(reply.jsonString)")

        let missing = try ExternalClient.curl(server.base + "/no-such-route")
        XCTAssertEqual(missing.status, 404)
        let ready = try ExternalClient.curl(server.base + "/readyz?verbose=1")
        XCTAssertEqual(ready.status, 200)
        XCTAssertEqual(try JSONValue.parse([UInt8](ready.body))["models"]?.intValue, 1)
    }

    func testFrameResponder() throws { try check(["--http2-transport", "nio"]) }

    func testNGHTTP2() throws { try check(["--http2-transport", "nghttp2"]) }

    func testStreamChannels() throws { try check(["--http2-stream-channels"]) }
}
