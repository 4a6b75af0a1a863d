import Foundation
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// HTTP/2 abuse from a raw client (`RawH2`): the abusive connection may be cut off, but other clients
/// keep being served and the server stays up.
final class HTTP2AbuseTests: XCTestCase {
    /// A well-behaved client (curl) gets a correct classification.
    func assertOthersAreServed(_ server: GlimpseProcess, file: StaticString = #filePath, line: UInt = #line) throws {
        let reply = try ExternalClient.curl(server.base + "/rpc", body: RPC.classifyBody(image: try SharedData.data("images/digits/torchserve_5.png"), model: "mnist-8"))
        XCTAssertEqual(reply.status, 200, file: file, line: line)
        XCTAssertEqual(try JSONValue.parse([UInt8](reply.body))["result"]?["predictions"]?[0]?["label"]?.stringValue, "5", file: file, line: line)
        XCTAssertTrue(server.process.isRunning, "server must stay up", file: file, line: line)
    }

    /// The control: the raw client's frames and header encoding are understood, so the refusals below
    /// are about the abuse, not about a malformed request.
    func testRawClientIsServedWhenWellBehaved() throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder(), "--http2-max-streams", "4"])
        defer { server.stop() }
        let raw = try RawH2(port: server.port)
        for i in 0..<4 {
            try raw.sendHeaders(stream: UInt32(1 + 2 * i), block: RawH2.headerBlock(method: "GET", path: "/healthz"), endStream: true)
        }
        let (frames, _) = raw.read(for: 1)
        for i in 0..<4 {
            let stream = UInt32(1 + 2 * i)
            XCTAssertTrue(frames.contains { $0.type == RawH2.FrameType.headers.rawValue && $0.stream == stream && $0.payload.first == 0x88 },
                          "stream \(stream) must be answered with :status 200")
            let body = frames.filter { $0.type == RawH2.FrameType.data.rawValue && $0.stream == stream }.flatMap(\.payload)
            XCTAssertTrue(String(decoding: body, as: UTF8.self).contains("ok"))
        }
        XCTAssertFalse(frames.contains { $0.type == RawH2.FrameType.goAway.rawValue })
    }

    /// Header blocks that are not well-formed requests (RFC 9113 §8.2, §8.3), a request whose trailers
    /// carry a pseudo-header field and bodies that disagree with their content-length (§8.1.1) reset
    /// their own stream with PROTOCOL_ERROR on either
    /// transport, and the connection goes on serving. (swift-nio-http2 runs without its own header
    /// block and content-length validation: `HTTP2RequestFields` makes these checks for both.)
    func testMalformedHeaderBlocksResetOnlyTheirStream() throws {
        for transport in ["nio", "nghttp2"] {
            let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder(), "--http2-transport", transport])
            defer { server.stop() }
            let raw = try RawH2(port: server.port)
            let get = [(":method", "GET"), (":scheme", "http"), (":path", "/healthz")]
            let blocks: [[(String, String)]] = [
                get + [("Accept", "x")],
                get + [("connection", "keep-alive")],
                get + [("te", "gzip")],
                get + [("x-bad", "a\r\nb")],
                [(":method", "GET"), ("accept", "x"), (":scheme", "http"), (":path", "/healthz")],
                get + [(":path", "/again")],
                get + [(":status", "200")],
                [(":method", "GET"), (":scheme", "http")],
            ]
            var malformed: [UInt32] = []
            var stream: UInt32 = 1
            for fields in blocks {
                try raw.sendHeaders(stream: stream, block: RawH2.headerBlock(fields: fields), endStream: true)
                malformed.append(stream)
                stream += 2
            }
            try raw.sendHeaders(stream: stream, block: RawH2.headerBlock(method: "POST", path: "/rpc"), endStream: false)
            try raw.send(RawH2.frame(.data, flags: 0, stream: stream, payload: Array("{}".utf8)))
            try raw.sendHeaders(stream: stream, block: RawH2.headerBlock(fields: [(":path", "/")]), endStream: true)
            malformed.append(stream)
            // Bodies that disagree with their content-length: shorter, and longer.
            for (declared, body) in [("5", "{}"), ("1", "{}")] {
                stream += 2
                try raw.sendHeaders(stream: stream, block: RawH2.headerBlock(method: "POST", path: "/rpc", extra: [("content-length", declared)]),
                                    endStream: false)
                try raw.send(RawH2.frame(.data, flags: 0x1, stream: stream, payload: Array(body.utf8)))
                malformed.append(stream)
            }
            let good = stream + 2
            try raw.sendHeaders(stream: good, block: RawH2.headerBlock(method: "GET", path: "/healthz"), endStream: true)
            let (frames, closed) = raw.read(for: 1.5)
            for id in malformed {
                let reset = frames.first { $0.type == RawH2.FrameType.rstStream.rawValue && $0.stream == id }
                XCTAssertEqual(reset?.payload, RawH2.be32(1), "\(transport): stream \(id) must be reset with PROTOCOL_ERROR")
                XCTAssertFalse(frames.contains { $0.type == RawH2.FrameType.headers.rawValue && $0.stream == id }, "\(transport): stream \(id) must not be answered")
            }
            XCTAssertTrue(frames.contains { $0.type == RawH2.FrameType.headers.rawValue && $0.stream == good && $0.payload.first == 0x88 },
                          "\(transport): the well-formed request on the same connection is answered 200")
            XCTAssertFalse(closed, transport)
            XCTAssertNil(frames.compactMap(RawH2.goAwayCode).first, transport)
            try assertOthersAreServed(server)
        }
    }

    func testRapidResetFloodIsCutOffAndOthersAreServed() throws { try rapidResetFlood(["--http2-transport", "nio"]) }

    /// The same flood against the libnghttp2 transport (its reset rate limit).
    func testRapidResetFloodIsCutOffOnNGHTTP2() throws { try rapidResetFlood(["--http2-transport", "nghttp2"]) }

    func rapidResetFlood(_ arguments: [String]) throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder()] + arguments)
        defer { server.stop() }
        let raw = try RawH2(port: server.port)
        // CVE-2023-44487 pattern: open a stream and reset it at once, thousands of times.
        let block = RawH2.headerBlock(method: "GET", path: "/healthz")
        var stream: UInt32 = 1
        let before = raw.bytesSent
        var sendFailure: (any Error)?
        for _ in 0..<20 {
            var burst: [UInt8] = []
            for _ in 0..<250 {
                burst += RawH2.frame(.headers, flags: 0x5, stream: stream, payload: block)
                burst += RawH2.frame(.rstStream, flags: 0, stream: stream, payload: RawH2.be32(8))  // CANCEL
                stream += 2
            }
            do { try raw.send(burst) } catch { sendFailure = error; break }
        }
        let flood = raw.bytesSent - before
        let (frames, closed) = raw.read(for: 3)
        let goAway = frames.compactMap(RawH2.goAwayCode).first
        // The flood must have left the client: at least one burst (250 open-and-reset streams, past
        // both servers' limits). A send may fail only because the server cut the connection part way,
        // which it then shows by a GOAWAY or a close.
        XCTAssertGreaterThanOrEqual(flood, 250 * (2 * 9 + block.count + 4), "\(arguments): the reset flood was not sent (\(flood) bytes)")
        if let sendFailure {
            XCTAssertTrue(goAway != nil || closed, "\(arguments): sending failed after \(flood) bytes without a GOAWAY or close: \(sendFailure)")
        }
        // NIO counts resets per window and answers a flood with GOAWAY ENHANCE_YOUR_CALM (0xb);
        // libnghttp2's rate limit ends it with a GOAWAY and a close.
        XCTAssertTrue(goAway == 0xb || closed, "\(arguments): a reset flood must be stopped; GOAWAY code \(String(describing: goAway)), closed \(closed), \(flood) bytes sent")
        try assertOthersAreServed(server)
    }

    func testTinyFlowControlWindowStallsOnlyThatStream() throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder()])
        defer { server.stop() }
        // SETTINGS_INITIAL_WINDOW_SIZE = 1: the server may send one byte of each response body, then must wait.
        let raw = try RawH2(port: server.port, settings: [(0x4, 1)])
        try raw.sendHeaders(stream: 1, block: RawH2.headerBlock(method: "GET", path: "/"), endStream: true)
        let (frames, _) = raw.read(for: 1.5)
        let dataBytes = frames.filter { $0.type == RawH2.FrameType.data.rawValue && $0.stream == 1 }.reduce(0) { $0 + $1.payload.count }
        XCTAssertLessThanOrEqual(dataBytes, 1, "the server must respect the client's flow-control window")
        XCTAssertTrue(frames.contains { $0.type == RawH2.FrameType.headers.rawValue && $0.stream == 1 }, "response headers are not flow-controlled")
        // While that response is stuck, everyone else is served.
        try assertOthersAreServed(server)
        let page = try ExternalClient.curl(server.base + "/")
        XCTAssertEqual(page.status, 200)
        XCTAssertGreaterThan(page.body.count, 1000)
    }

    func testOversizedHeaderBlockIsRefused() throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder()])
        defer { server.stop() }
        let raw = try RawH2(port: server.port)
        // 64 KiB of header value against the advertised 16 KiB SETTINGS_MAX_HEADER_LIST_SIZE.
        let block = RawH2.headerBlock(method: "GET", path: "/healthz", extra: [("x-padding", String(repeating: "a", count: 64 << 10))])
        let before = raw.bytesSent
        var sendFailure: (any Error)?
        do { try raw.sendHeaders(stream: 1, block: block, endStream: true) } catch { sendFailure = error }
        let sent = raw.bytesSent - before
        let (frames, closed) = raw.read(for: 2)
        let refused = closed || frames.contains { ($0.type == RawH2.FrameType.rstStream.rawValue && $0.stream == 1) || $0.type == RawH2.FrameType.goAway.rawValue }
        let answeredOK = frames.contains { $0.type == RawH2.FrameType.headers.rawValue && $0.stream == 1 && $0.payload.first == 0x88 }  // :status 200 (HPACK static index 8)
        // More than the advertised 16 KiB left the client (all of it, unless the server cut the
        // connection part way, which it then shows by a close or GOAWAY), and the server refused it.
        XCTAssertGreaterThan(sent, 16 << 10, "the oversized header block was not sent (\(sent) bytes)")
        if let sendFailure { XCTAssertTrue(refused, "sending failed after \(sent) bytes without a refusal: \(sendFailure)") }
        XCTAssertTrue(refused, "an oversized header block must be refused (RST_STREAM, GOAWAY or close); frames \(frames.map { ($0.type, $0.stream) })")
        XCTAssertFalse(answeredOK)
        try assertOthersAreServed(server)
    }

    func testManyStreamsBeyondTheLimitAreRefusedNotQueued() throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder(), "--http2-max-streams", "4"])
        defer { server.stop() }
        let raw = try RawH2(port: server.port)
        // Ten streams whose request bodies never come, against a limit of four.
        var burst: [UInt8] = []
        for i in 0..<10 {
            burst += RawH2.frame(.headers, flags: 0x4, stream: UInt32(1 + 2 * i), payload: RawH2.headerBlock(method: "POST", path: "/rpc"))
        }
        try raw.send(burst)
        let (frames, _) = raw.read(for: 1.5)
        let resets = Set(frames.filter { $0.type == RawH2.FrameType.rstStream.rawValue }.map(\.stream))
        let goAway = frames.contains { $0.type == RawH2.FrameType.goAway.rawValue }
        // NIO treats a stream over the limit as a connection error: GOAWAY PROTOCOL_ERROR (RFC 9113 §5.1.2
        // allows either that or RST_STREAM). Either way nothing over the limit is queued.
        XCTAssertTrue(resets.count >= 6 || goAway, "streams over SETTINGS_MAX_CONCURRENT_STREAMS must be refused (resets: \(resets.sorted()))")
        try assertOthersAreServed(server)
    }
}
