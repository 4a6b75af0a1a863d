import HTTPTypes
import NIOCore
import NIOHPACK
import XCTest

@testable import GlimpseServer

/// The fields every response carries, added where the route set none: the same for HTTP/1.1
/// (`HTTPResponse.completed`) and HTTP/2 (`HTTP2FieldRules.forEachResponseField`).
final class ResponseFieldsTests: XCTestCase {
    func testDefaultsAreAddedOnlyWhereMissing() {
        let bare = HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"])
        let done = bare.completed(bodyBytes: 42)
        XCTAssertEqual(done.headerFields[.contentType], "application/json")
        XCTAssertEqual(done.headerFields[.contentLength], "42")
        XCTAssertEqual(done.headerFields[.server], "glimpse")
        XCTAssertEqual(done.headerFields[.date]?.hasSuffix(" GMT"), true, "an IMF-fixdate")
        XCTAssertEqual(done.headerFields.count, 4)

        let own = HTTPResponse(status: .ok, headerFields: [.contentLength: "5", .server: "x", .date: "then"])
        XCTAssertEqual(own.completed(bodyBytes: 42).headerFields, own.headerFields, "the route's own fields are kept as they are")
    }

    func testHTTP2WritesTheSameFieldsLessConnectionSpecificOnes() {
        var fields: HTTPFields = [.contentType: "text/plain", .connection: "close", .server: "x"]
        fields.append(HTTPField(name: .transferEncoding, value: "chunked"))
        let head = HTTPResponse(status: .ok, headerFields: fields)
        var written: [(String, String)] = []
        HTTP2FieldRules.forEachResponseField(head, bodyBytes: 7) { written.append(($0, $1)) }
        XCTAssertEqual(written.map(\.0), ["content-type", "server", "content-length", "date"])
        XCTAssertEqual(written.first { $0.0 == "content-length" }?.1, "7")
        let h1 = head.completed(bodyBytes: 7)
        for (name, value) in written {
            XCTAssertEqual(HTTPField.Name(name).flatMap { h1.headerFields[$0] }, value, name)
        }
    }
    /// Lengths change from response to response: HPACK writes them literally and keeps them out of
    /// the dynamic table, so the fields that repeat (`content-type`, `server`, the second's `date`)
    /// stay in it and cost one byte each, however many responses a connection carries.
    func testHTTP2KeepsChangingFieldsOutOfTheDynamicTable() throws {
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var sizes: [Int] = []
        for length in 100..<400 {
            let head = HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"])
            let headers = HTTP2FrameResponder.responseHeaders(head, bodyBytes: length)
            var block = ByteBuffer()
            try encoder.encode(headers: headers, to: &block)
            sizes.append(block.readableBytes)
            let decoded = try decoder.decodeHeaders(from: &block)
            XCTAssertEqual(decoded[":status"], ["200"])
            XCTAssertEqual(decoded["content-length"], [String(length)])
            XCTAssertEqual(decoded["content-type"], ["application/json"])
            XCTAssertEqual(decoded["server"], ["glimpse"])
            XCTAssertEqual(decoded["date"].count, 1)
        }
        // content-type (16 + 12 + 32 bytes), server (7 + 6 + 32) and one date a second (29 + 4 + 32,
        // two if the loop crossed a second); 300 lengths would have added 40 bytes each.
        XCTAssertTrue([170, 235].contains(encoder.dynamicTableSize), "only the repeating fields are indexed: \(encoder.dynamicTableSize)")
        for name in ["content-length", "age", "etag", "last-modified", "location", "set-cookie"] {
            XCTAssertFalse(HTTP2FieldRules.isWorthIndexing(name), name)
        }
        for name in ["content-type", "server", "date", "cache-control", "vary", "x-glimpse-model"] {
            XCTAssertTrue(HTTP2FieldRules.isWorthIndexing(name), name)
        }
        // After the first response: :status, content-type, server and the date one byte each (the date
        // again in full once a second), then the length (name index and 2-3 value bytes).
        XCTAssertLessThan(sizes.dropFirst().max() ?? .max, sizes[0])
    }
}
