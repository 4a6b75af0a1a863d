import HTTPTypes
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
}
