import Foundation
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// Both HTTP/1.1 transports answer the same requests the same way: `HTTP1Responder` in the
/// connection's pipeline (the default) and Hummingbird's task per connection
/// (`--http1-connection-tasks`, kept for comparison). curl for the routes; a raw socket for what
/// curl does not do: pipelined requests, a client that half-closes, bytes that are not HTTP.
final class HTTP1TransportTests: XCTestCase {
    func check(_ arguments: [String]) throws {
        let server = try GlimpseProcess(arguments: ["--models", try mnistOnlyFolder("http1")] + arguments)
        defer { server.stop() }
        let health = try ExternalClient.curl(server.base + "/healthz", http2: false)
        XCTAssertEqual(health.status, 200, "\(arguments)")
        XCTAssertEqual(health.httpVersion, "1.1")
        let headers = health.headers.lowercased()
        XCTAssertTrue(headers.contains("content-type: application/json"), health.headers)
        XCTAssertTrue(headers.contains("content-length: 15"), health.headers)
        XCTAssertTrue(headers.contains("date: "), "origin servers send a date (RFC 9110 §6.6.1): \(health.headers)")

        let image = try SharedData.data("images/digits/torchserve_7.png")
        let classify = try ExternalClient.curl(server.base + "/rpc", body: RPC.classifyBody(image: image, model: "mnist-8"), http2: false)
        XCTAssertEqual(classify.status, 200)
        XCTAssertEqual(RPC.top1(try JSONValue.parse([UInt8](classify.body))), 7, "\(arguments)")
        XCTAssertEqual(try ExternalClient.curl(server.base + "/no-such-route", http2: false).status, 404)

        // Three requests in one write: answered in order, the last (Connection: close) then closes.
        let rpc = Array(#"{"jsonrpc":"2.0","id":9,"method":"health"}"#.utf8)
        let pipelined = RawSocket.exchange(port: server.port, Array((
            "POST /rpc HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: \(rpc.count)\r\n\r\n").utf8) + rpc
            + Array("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\nGET /readyz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".utf8))
        XCTAssertTrue(pipelined.closed, "\(arguments): Connection: close ends the connection")
        let statuses = pipelined.text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(6) }
        XCTAssertEqual(statuses, ["200 OK", "200 OK", "200 OK"], pipelined.text)
        let rpcAt = pipelined.text.range(of: #""id":9"#), healthAt = pipelined.text.range(of: #"{"status":"ok"}"#),
            readyAt = pipelined.text.range(of: #""ready":true"#)
        XCTAssertNotNil(rpcAt); XCTAssertNotNil(healthAt); XCTAssertNotNil(readyAt)
        if let rpcAt, let healthAt, let readyAt {
            XCTAssertTrue(rpcAt.lowerBound < healthAt.lowerBound && healthAt.lowerBound < readyAt.lowerBound, pipelined.text)
        }

        // A client that sends its request and half-closes still gets the answer, then the close.
        let halfClosed = RawSocket.exchange(port: server.port, Array((
            "POST /rpc HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: \(rpc.count)\r\n\r\n").utf8) + rpc,
            halfClose: true)
        XCTAssertTrue(halfClosed.text.hasPrefix("HTTP/1.1 200 OK"), "\(arguments): \(halfClosed.text)")
        XCTAssertTrue(halfClosed.text.contains(#""id":9"#), halfClosed.text)
        XCTAssertTrue(halfClosed.closed)

        // Bytes that are not HTTP: 400, then the connection goes; the server keeps serving.
        let garbage = RawSocket.exchange(port: server.port, Array("NOT HTTP AT ALL\r\n\r\n".utf8))
        XCTAssertTrue(garbage.text.hasPrefix("HTTP/1.1 400 "), "\(arguments): \(garbage.text)")
        XCTAssertTrue(garbage.closed)
        XCTAssertEqual(try ExternalClient.curl(server.base + "/healthz", http2: false).status, 200)
    }

    func testPipelineResponder() throws { try check([]) }

    func testConnectionTasks() throws { try check(["--http1-connection-tasks"]) }

    /// A client that sends `Expect: 100-continue` and waits (curl does for bodies over 1 MiB, for
    /// one second) gets `100 Continue` before it sends its body, then the answer.
    func testExpectContinueIsAnsweredBeforeTheBody() throws {
        let server = try GlimpseProcess(arguments: ["--models", try mnistOnlyFolder("http1")])
        defer { server.stop() }
        let rpc = Array(#"{"jsonrpc":"2.0","id":5,"method":"health"}"#.utf8)
        let socket = try RawSocket(port: server.port)
        try socket.send(Array("POST /rpc HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: \(rpc.count)\r\nExpect: 100-continue\r\n\r\n".utf8))
        let interim = socket.read(until: "\r\n\r\n", seconds: 5)
        XCTAssertTrue(interim.hasPrefix("HTTP/1.1 100 Continue\r\n"), interim)
        try socket.send(rpc)
        let answer = socket.read(until: #""id":5"#, seconds: 5)
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 200 OK"), answer)
    }
}

extension RawSocket {
    /// Reads until what came back contains `marker`, the server closes, or `seconds` pass.
    func read(until marker: String, seconds: Double) -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, !String(decoding: received, as: UTF8.self).contains(marker) {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { received += buffer[0..<n] } else if n == 0 { break }
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Sends `bytes` on a new connection (then shuts down the sending side with `halfClose`) and
    /// reads until the server closes or 5 s pass: what came back, and whether the server closed.
    static func exchange(port: Int, _ bytes: [UInt8], halfClose: Bool = false) -> (text: String, closed: Bool) {
        guard let socket = try? RawSocket(port: port), (try? socket.send(bytes)) != nil else { return ("", false) }
        if halfClose { shutdown(socket.fd, Int32(SHUT_WR)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(socket.fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { received += buffer[0..<n]; continue }
            if n == 0 { return (String(decoding: received, as: UTF8.self), true) }
            if !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return (String(decoding: received, as: UTF8.self), true) }
        }
        return (String(decoding: received, as: UTF8.self), false)
    }
}
