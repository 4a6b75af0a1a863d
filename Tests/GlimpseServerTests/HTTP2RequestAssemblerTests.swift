import HTTPTypes
import NIOCore
import NIOHPACK
import NIOHTTP2
import XCTest

@testable import GlimpseServer

/// Requests built from an HTTP/2 connection's frames, and the receive windows handed back, frame by
/// frame without a socket.
final class HTTP2RequestAssemblerTests: XCTestCase {
    typealias Assembler = HTTP2RequestAssembler

    func makeAssembler(maxBody: Int = 10) -> Assembler {
        Assembler(maxBody: maxBody, streamWindow: 1000, connectionWindow: 100_000)
    }

    func headers(_ id: HTTP2StreamID, method: String = "POST", path: String = "/rpc", extra: [(String, String)] = [],
                 endStream: Bool = false) -> HTTP2Frame {
        var h = HPACKHeaders([(":method", method), (":scheme", "http"), (":authority", "localhost"), (":path", path)])
        for (name, value) in extra { h.add(name: name, value: value) }
        return HTTP2Frame(streamID: id, payload: .headers(.init(headers: h, endStream: endStream)))
    }

    func data(_ id: HTTP2StreamID, _ text: String, endStream: Bool = false) -> HTTP2Frame {
        HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(ByteBuffer(string: text)), endStream: endStream)))
    }

    func request(_ path: String, method: HTTPRequest.Method = .post, fields: HTTPFields = [:]) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "http", authority: "localhost", path: path, headerFields: fields)
    }

    func testHeadersWithEndStreamDispatchAtOnce() {
        var a = makeAssembler()
        XCTAssertEqual(a.receive(headers(1, method: "GET", path: "/healthz", endStream: true)),
                       [.dispatch(1, request("/healthz", method: .get), ByteBuffer())])
        XCTAssertEqual(a.openRequests, 0)
    }

    func testBodyIsCollectedAcrossFramesAndStreamsInterleave() {
        var a = makeAssembler()
        XCTAssertEqual(a.receive(headers(1)), [])
        XCTAssertEqual(a.receive(headers(3, extra: [("content-type", "application/json")])), [])
        XCTAssertEqual(a.receive(data(1, "abc")), [])
        XCTAssertEqual(a.receive(data(3, "xy", endStream: true)),
                       [.dispatch(3, request("/rpc", fields: [.contentType: "application/json"]), ByteBuffer(string: "xy"))])
        XCTAssertEqual(a.receive(data(1, "def", endStream: true)), [.dispatch(1, request("/rpc"), ByteBuffer(string: "abcdef"))])
        XCTAssertEqual(a.openRequests, 0)
    }

    func testTrailersEndTheRequest() {
        var a = makeAssembler()
        _ = a.receive(headers(1))
        _ = a.receive(data(1, "12"))
        let trailers = HTTP2Frame(streamID: 1, payload: .headers(.init(headers: HPACKHeaders([("x-checksum", "1")]), endStream: true)))
        XCTAssertEqual(a.receive(trailers), [.dispatch(1, request("/rpc"), ByteBuffer(string: "12"))])
    }

    func testDeclaredLengthOverTheLimitIsDispatchedAsTooLargeAtOnce() {
        var a = makeAssembler(maxBody: 10)
        let head = headers(1, extra: [("content-length", "11")])
        XCTAssertEqual(a.receive(head), [.dispatchTooLarge(1, request("/rpc", fields: [.contentLength: "11"]))])
        XCTAssertEqual(a.receive(data(1, "0123456789")), [], "the rest of the body is dropped")
        XCTAssertEqual(a.receive(data(1, "x", endStream: true)), [], "and the request is not dispatched again")
        XCTAssertEqual(a.openRequests, 0)
    }

    func testBodyGrowingOverTheLimitIsDispatchedAsTooLargeOnce() {
        var a = makeAssembler(maxBody: 10)
        _ = a.receive(headers(1))
        XCTAssertEqual(a.receive(data(1, "0123456789")), [], "exactly the limit is accepted")
        XCTAssertEqual(a.receive(data(1, "x")), [.dispatchTooLarge(1, request("/rpc"))])
        XCTAssertEqual(a.receive(data(1, "more")), [])
        XCTAssertEqual(a.receive(data(1, "end", endStream: true)), [])
        // A later request on the connection is unaffected.
        _ = a.receive(headers(3))
        XCTAssertEqual(a.receive(data(3, "ok", endStream: true)), [.dispatch(3, request("/rpc"), ByteBuffer(string: "ok"))])
    }

    func testHeaderBlocksThatAreNotRequestsResetTheStream() {
        var a = makeAssembler()
        let noMethod = HTTP2Frame(streamID: 1, payload: .headers(.init(headers: HPACKHeaders([(":path", "/")]), endStream: true)))
        XCTAssertEqual(a.receive(noMethod), [.resetMalformed(1)])
        let unknownPseudo = HTTP2Frame(streamID: 3, payload: .headers(.init(
            headers: HPACKHeaders([(":method", "GET"), (":path", "/"), (":protocol", "websocket")]), endStream: true)))
        XCTAssertEqual(a.receive(unknownPseudo), [.resetMalformed(3)])
        let badName = HTTP2Frame(streamID: 5, payload: .headers(.init(
            headers: HPACKHeaders([(":method", "GET"), (":path", "/"), ("bad name", "x")]), endStream: true)))
        XCTAssertEqual(a.receive(badName), [.resetMalformed(5)])
        XCTAssertEqual(a.openRequests, 0)
    }

    /// The rules of RFC 9113 §8.2 and §8.3, which `HTTP2RequestFields` applies in place of the
    /// handler's own header block validation (off on this transport).
    func testMalformedRequestFieldsResetTheStream() {
        let base = [(":method", "GET"), (":scheme", "http"), (":path", "/healthz")]
        let cases: [(String, [(String, String)])] = [
            ("uppercase name", base + [("Accept", "x")]),
            ("connection-specific field", base + [("connection", "keep-alive")]),
            ("transfer-encoding", base + [("transfer-encoding", "chunked")]),
            ("te other than trailers", base + [("te", "gzip")]),
            ("CR LF in a value", base + [("x-bad", "a\r\nb")]),
            ("NUL in a value", base + [("x-bad", "a\u{0}b")]),
            ("leading space in a value", base + [("x-bad", " a")]),
            ("empty name", base + [("", "x")]),
            ("pseudo-header field after a regular one", [(":method", "GET"), ("accept", "x"), (":scheme", "http"), (":path", "/")]),
            ("duplicate :path", base + [(":path", "/again")]),
            ("duplicate :method", base + [(":method", "POST")]),
            ("response pseudo-header field", base + [(":status", "200")]),
            ("no :path", [(":method", "GET"), (":scheme", "http")]),
            ("no :scheme", [(":method", "GET"), (":path", "/")]),
            ("empty :path", [(":method", "GET"), (":scheme", "http"), (":path", "")]),
            ("CONNECT", [(":method", "CONNECT"), (":authority", "example.com:443")]),
        ]
        var a = makeAssembler()
        for (i, (why, fields)) in cases.enumerated() {
            let id = HTTP2StreamID(1 + 2 * i)
            let frame = HTTP2Frame(streamID: id, payload: .headers(.init(headers: HPACKHeaders(fields), endStream: true)))
            XCTAssertEqual(a.receive(frame), [.resetMalformed(id)], why)
        }
        let te = HTTP2Frame(streamID: 101, payload: .headers(.init(headers: HPACKHeaders(base + [("te", "trailers")]), endStream: true)))
        XCTAssertEqual(a.receive(te), [.dispatch(101, HTTPRequest(method: .get, scheme: "http", authority: nil, path: "/healthz",
                                                                    headerFields: [HTTPField.Name("te")!: "trailers"]), ByteBuffer())],
                       "te: trailers is allowed, and :authority is optional")
        XCTAssertEqual(a.openRequests, 0)
    }

    /// A body that disagrees with its `content-length` is malformed (RFC 9113 §8.1.1): shorter at the
    /// end of the stream, longer as soon as it passes it, any length on a block that ends the stream,
    /// and a `content-length` that is not a number. One that agrees is served.
    func testContentLengthMismatchResetsTheStream() {
        var a = makeAssembler(maxBody: 100)
        _ = a.receive(headers(1, extra: [("content-length", "5")]))
        XCTAssertEqual(a.receive(data(1, "ab", endStream: true)), [.resetMalformed(1)], "shorter")
        _ = a.receive(headers(3, extra: [("content-length", "3")]))
        XCTAssertEqual(a.receive(data(3, "ab")), [])
        XCTAssertEqual(a.receive(data(3, "cd")), [.resetMalformed(3)], "longer, before the end")
        XCTAssertEqual(a.receive(data(3, "e", endStream: true)), [], "nothing more for that stream")
        XCTAssertEqual(a.receive(headers(5, extra: [("content-length", "2")], endStream: true)), [.resetMalformed(5)], "no body")
        XCTAssertEqual(a.receive(headers(7, extra: [("content-length", "two")])), [.resetMalformed(7)], "not a number")
        _ = a.receive(headers(9, extra: [("content-length", "4")]))
        _ = a.receive(data(9, "ab"))
        XCTAssertEqual(a.receive(data(9, "cd", endStream: true)),
                       [.dispatch(9, request("/rpc", fields: [.contentLength: "4"]), ByteBuffer(string: "abcd"))])
        XCTAssertEqual(a.receive(headers(11, method: "GET", path: "/healthz", extra: [("content-length", "0")], endStream: true)),
                       [.dispatch(11, request("/healthz", method: .get, fields: [.contentLength: "0"]), ByteBuffer())])
        XCTAssertEqual(a.receive(headers(13, extra: [("content-length", "2"), ("content-length", "3")])), [.resetMalformed(13)],
                       "two different lengths")
        XCTAssertEqual(a.receive(headers(15, extra: [("content-length", "+2")])), [.resetMalformed(15)], "not digits only")
        _ = a.receive(headers(17, extra: [("content-length", "2"), ("content-length", "2")]))
        var twice = HTTPFields()
        twice.append(HTTPField(name: .contentLength, value: "2"))
        twice.append(HTTPField(name: .contentLength, value: "2"))
        XCTAssertEqual(a.receive(data(17, "ab", endStream: true)), [.dispatch(17, request("/rpc", fields: twice), ByteBuffer(string: "ab"))],
                       "the same length twice is one length")
        XCTAssertEqual(a.openRequests, 0)
    }

    func testMalformedTrailersResetTheStream() {
        for (why, trailer) in [("pseudo-header field", (":path", "/")), ("uppercase name", ("X-Sum", "1")),
                               ("connection-specific field", ("keep-alive", "5")), ("LF in a value", ("x-sum", "1\n2"))] {
            var a = makeAssembler()
            _ = a.receive(headers(1))
            _ = a.receive(data(1, "12"))
            let frame = HTTP2Frame(streamID: 1, payload: .headers(.init(headers: HPACKHeaders([trailer]), endStream: true)))
            XCTAssertEqual(a.receive(frame), [.resetMalformed(1)], why)
            XCTAssertEqual(a.openRequests, 0, why)
        }
        var a = makeAssembler()
        _ = a.receive(headers(1))
        let noEnd = HTTP2Frame(streamID: 1, payload: .headers(.init(headers: HPACKHeaders([("x-sum", "1")]), endStream: false)))
        XCTAssertEqual(a.receive(noEnd), [.resetMalformed(1)], "a second header block must end the stream")
    }

    func testResetDropsARequestStillArriving() {
        var a = makeAssembler()
        _ = a.receive(headers(1))
        _ = a.receive(data(1, "abc"))
        XCTAssertEqual(a.receive(HTTP2Frame(streamID: 1, payload: .rstStream(.cancel))), [])
        XCTAssertEqual(a.openRequests, 0)
        XCTAssertEqual(a.receive(data(1, "def", endStream: true)), [], "frames after the reset are not a request")
    }

    func testWindowsAreRestoredOnceHalfUsed() {
        var a = makeAssembler()
        XCTAssertEqual(a.initialConnectionCredit, .windowUpdate(.rootStream, 100_000 - 65_535))
        XCTAssertNil(a.windowChanged(.rootStream, inboundWindow: 50_001))
        XCTAssertEqual(a.windowChanged(.rootStream, inboundWindow: 50_000), .windowUpdate(.rootStream, 50_000))
        XCTAssertEqual(a.windowChanged(.rootStream, inboundWindow: 0), .windowUpdate(.rootStream, 100_000))
        // A stream's window is restored only while its request is still arriving.
        XCTAssertNil(a.windowChanged(1, inboundWindow: 100), "no request on stream 1")
        _ = a.receive(headers(1))
        XCTAssertNil(a.windowChanged(1, inboundWindow: 501))
        XCTAssertEqual(a.windowChanged(1, inboundWindow: 400), .windowUpdate(1, 600))
        _ = a.receive(data(1, "x", endStream: true))
        XCTAssertNil(a.windowChanged(1, inboundWindow: 0), "the request has arrived")
        XCTAssertNil(Assembler(maxBody: 1, streamWindow: 1, connectionWindow: 65_535).initialConnectionCredit)
    }
}
