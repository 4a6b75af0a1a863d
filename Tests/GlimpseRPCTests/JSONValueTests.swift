import GlimpseRPC
import XCTest

final class JSONValueTests: XCTestCase {
    func testRoundTrip() throws {
        let text = #"{"a":[1,-2,3.5,true,false,null],"b":"x\"y\\z\n\u00e9\ud83d\ude00","c":{}}"#
        let v = try JSONValue.parse(Array(text.utf8))
        XCTAssertEqual(v["a"], [1, -2, 3.5, true, false, .null])
        XCTAssertEqual(v["b"], .string("x\"y\\z\né😀"))
        XCTAssertEqual(try JSONValue.parse(v.serialized()), v)
    }

    func testRejectsMalformed() {
        for bad in ["", "{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\u{01}\"", "tru", "{} x", "\"\\x\""] {
            XCTAssertThrowsError(try JSONValue.parse(Array(bad.utf8)), bad)
        }
    }

    func testDepthLimit() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        XCTAssertThrowsError(try JSONValue.parse(Array(deep.utf8)))
    }
}
