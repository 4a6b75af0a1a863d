import HTTPTypes
import XCTest

@testable import GlimpseServer

/// The request rules the libnghttp2 transport checks itself (RFC 9113 §8.2, §8.3), field by field,
/// without a session.
final class NGHTTP2IncomingRequestTests: XCTestCase {
    private func feed(_ fields: [(String, String)], limit: Int = 16 << 10) -> (NGHTTP2IncomingRequest, [NGHTTP2IncomingRequest.HeaderResult]) {
        var request = NGHTTP2IncomingRequest()
        var results: [NGHTTP2IncomingRequest.HeaderResult] = []
        for (name, value) in fields {
            let n = Array(name.utf8), v = Array(value.utf8)
            results.append(n.withUnsafeBufferPointer { nb in v.withUnsafeBufferPointer { vb in request.header(name: nb, value: vb, limit: limit) } })
        }
        return (request, results)
    }

    private let get: [(String, String)] = [(":method", "GET"), (":scheme", "http"), (":path", "/readyz")]

    func testAWellFormedRequestWithoutAuthorityIsServed() {
        var (request, results) = feed(get + [("accept", "application/json")])
        XCTAssertEqual(results, [.accepted, .accepted, .accepted, .accepted])
        let head = request.headersComplete()
        XCTAssertEqual(head?.method, .get)
        XCTAssertEqual(head?.path, "/readyz")
        XCTAssertNil(head?.authority)
        XCTAssertEqual(head?.headerFields[.accept], "application/json")
    }

    func testMalformedFieldsAreRefused() {
        let cases: [[(String, String)]] = [
            get + [("Accept", "x")],                         // uppercase name
            get + [("connection", "keep-alive")],            // connection-specific
            get + [("te", "gzip")],                          // te other than "trailers"
            get + [("x-bad", "a\r\nb")],                     // CR LF in a value
            [(":method", "GET"), ("accept", "x"), (":path", "/")],   // pseudo-field after a regular one
            get + [(":path", "/again")],                     // duplicate pseudo-field
            get + [(":status", "200")],                      // a response pseudo-field
        ]
        for fields in cases {
            let (_, results) = feed(fields)
            XCTAssertEqual(results.last, .malformed, "\(fields)")
        }
        XCTAssertEqual(feed(get + [("te", "trailers")]).1.last, .accepted)
    }

    func testMissingPseudoFieldsAndConnectAreNotRequests() {
        var (noPath, _) = feed([(":method", "GET"), (":scheme", "http")])
        XCTAssertNil(noPath.headersComplete())
        var (connect, _) = feed([(":method", "CONNECT"), (":scheme", "http"), (":path", "/")])
        XCTAssertNil(connect.headersComplete())
    }

    func testHeaderListLimitCountsNameValueAnd32() {
        // :method GET = 7 + 3 + 32 = 42 bytes; a limit of 41 refuses it.
        XCTAssertEqual(feed([(":method", "GET")], limit: 41).1, [.tooLarge])
        XCTAssertEqual(feed([(":method", "GET")], limit: 42).1, [.accepted])
    }

    func testBodyLengthAndLimit() {
        var (request, _) = feed([(":method", "POST"), (":scheme", "http"), (":path", "/rpc"), ("content-length", "5")])
        XCTAssertNotNil(request.headersComplete())
        XCTAssertFalse(request.declaresMoreThan(5))
        XCTAssertTrue(request.declaresMoreThan(4))
        XCTAssertTrue(Array("abcd".utf8).withUnsafeBytes { request.append($0, maxBody: 5) })
        XCTAssertTrue(request.lengthMismatch(bodyBytes: request.body.readableBytes), "4 bytes against a content-length of 5")
        XCTAssertFalse(Array("ef".utf8).withUnsafeBytes { request.append($0, maxBody: 5) }, "6 bytes is over the limit")
        XCTAssertTrue(request.refused)
        XCTAssertEqual(request.body.readableBytes, 0)
    }
}
