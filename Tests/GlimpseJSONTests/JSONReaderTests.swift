import GlimpseJSON
import XCTest

/// The shared lexer and parser through a builder that records what it is given: member order,
/// duplicate keys and number texts reach the builder untouched, and errors carry their offset.
final class JSONReaderTests: XCTestCase {
    /// Writes every value back as compact text, numbers as written and members in order.
    private struct Echo: JSONTreeBuilder {
        func null() -> String { "null" }
        func bool(_ value: Bool) -> String { value ? "true" : "false" }
        func number(_ text: String, isInteger: Bool) -> String? { (isInteger ? "i:" : "d:") + text }
        func string(_ value: String) -> String { "<\(value)>" }
        func array(_ items: [String]) -> String { "[" + items.joined(separator: ",") + "]" }
        func object(_ members: [(key: String, value: String)]) -> String {
            "{" + members.map { "\($0.key)=\($0.value)" }.joined(separator: ",") + "}"
        }
    }

    private func echo(_ text: String, maxDepth: Int = 64) throws -> String {
        try JSONReader.parse(Array(text.utf8), maxDepth: maxDepth, builder: Echo())
    }

    func testOrderDuplicatesAndNumberTexts() throws {
        XCTAssertEqual(try echo(#" {"b": 1.50, "a": [1e3, -0, 2E-2], "b": null} "#),
                       "{b=d:1.50,a=[d:1e3,i:-0,d:2E-2],b=null}")
        XCTAssertEqual(try echo(#"[true,false,"x\ty\u00e9\ud83d\ude00"]"#), "[true,false,<x\ty\u{e9}\u{1F600}>]")
        XCTAssertEqual(try echo("[]"), "[]")
        XCTAssertEqual(try echo("{}"), "{}")
    }

    /// Long strings are scanned 8 bytes at a time: an escape, the closing quote or a control
    /// character must be found at every position of a block, and in the tail after the last one.
    func testLongStringsFindEveryQuoteEscapeAndControlCharacter() throws {
        let filler = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/\u{7F}é€ \u{1F600}!#$%&'()*,-.:;<=>?@[]^_`{|}~"
        for n in 0..<filler.count {
            let plain = String(filler.prefix(n))
            XCTAssertEqual(try echo("[\"\(plain)\"]"), "[<\(plain)>]")
            XCTAssertEqual(try echo("[\"\(plain)\\n\(plain)\"]"), "[<\(plain)\n\(plain)>]")
            XCTAssertThrowsError(try echo("[\"\(plain)\u{01}x\"]"), "control character after \(n) bytes")
            XCTAssertThrowsError(try echo("[\"\(plain)"), "unterminated after \(n) bytes")
        }
    }

    func testErrorsCarryTheirOffset() {
        let cases: [(String, String, Int)] = [
            ("", "empty body; expected a JSON value", 0),
            ("[1,]", "unexpected character ']'", 3),
            (#"{"a" 1}"#, "expected ':' after object key", 5),
            ("01", "unexpected data after the JSON value", 1),
            ("1.", "invalid number: digit expected after '.'", 2),
            (#""\ud800""#, "unpaired UTF-16 surrogate in string", 7),
            ("[1 2]", "expected ',' or ']' in array", 3),
            (#"{"a":1 "b":2}"#, "expected ',' or '}' in object", 7),
            ("[1, 2", "unexpected end of JSON inside an array", 5),
            (#"{"a":1 "#, "unexpected end of JSON inside an object", 7),
        ]
        for (text, message, offset) in cases {
            XCTAssertThrowsError(try echo(text), text) { error in
                guard let e = error as? JSONParseError else { return XCTFail("\(text): \(error)") }
                XCTAssertEqual(e.message, message, text)
                XCTAssertEqual(e.offset, offset, text)
            }
        }
    }

    func testDepthLimit() throws {
        XCTAssertEqual(try echo("[[[]]]", maxDepth: 3), "[[[]]]")
        XCTAssertThrowsError(try echo("[[[[]]]]", maxDepth: 3))
    }
}
