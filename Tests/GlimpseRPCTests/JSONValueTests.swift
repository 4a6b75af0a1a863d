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

    /// The writer's own integer digits and whole-string copy against known texts: extremes of Int,
    /// zero, negatives, whole doubles, and strings with and without characters to escape.
    func testSerializedTexts() {
        let cases: [(JSONValue, String)] = [
            (.int(0), "0"), (.int(7), "7"), (.int(-45), "-45"), (.int(1_000_000), "1000000"),
            (.int(Int.max), "9223372036854775807"), (.int(Int.min), "-9223372036854775808"),
            (.double(-3), "-3"), (.double(2.5), "2.5"), (.double(.nan), "null"),
            (.string("golden retriever"), #""golden retriever""#),
            (.string("a\"b\\c\n\u{01}é"), #""a\"b\\c\n\u0001é""#),
            (.object(["b": .int(-1), "a": .array([.int(10), .string("")])]), #"{"a":[10,""],"b":-1}"#),
        ]
        for (value, text) in cases {
            XCTAssertEqual(value.jsonString, text)
        }
    }

    /// Doubles of three decimals (timings, energy) are written by integer arithmetic; every one must
    /// read as Swift's shortest round-trip `description` does, as must the doubles that fall back to it.
    func testDoublesWriteAsTheirShortestForm() {
        var rng = SystemRandomNumberGenerator()
        var values: [Double] = [0.001, -0.001, 0.5, -0.5, 0.1, 0.12, 0.123, 1.001, 999.999, 123456789.123, 0.441, 1e-7, 3.14159,
                                 0.1 + 0.2, 1e15 + 0.5, 2.5e-300]
        for _ in 0..<20_000 {
            let k = Int.random(in: -2_000_000_000...2_000_000_000, using: &rng)
            values.append((Double(k) / 1000 * 1000).rounded() / 1000)
            values.append(Double(Int.random(in: -999_999_999_999...999_999_999_999, using: &rng)) / 1000)
            values.append(Double.random(in: -1000...1000, using: &rng))
        }
        for d in values where d.rounded() != d {
            XCTAssertEqual(JSONValue.double(d).jsonString, "\(d)", "\(d)")
        }
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
