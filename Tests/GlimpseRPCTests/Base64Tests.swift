import Foundation
@testable import GlimpseRPC
import XCTest

final class Base64Tests: XCTestCase {
    /// Foundation's encoder is the reference: every length 1...200 (all tails), in both alphabets,
    /// with and without padding, with whitespace and line breaks sprinkled in, and behind a data URL.
    func testDecodesWhatFoundationEncodes() throws {
        var rng = SystemRandomNumberGenerator()
        for length in 1...200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let standard = Data(bytes).base64EncodedString()
            XCTAssertEqual(try Base64.decode(standard, field: "image"), bytes, "length \(length)")

            let urlSafe = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            let unpadded = urlSafe.replacingOccurrences(of: "=", with: "")
            XCTAssertEqual(try Base64.decode(unpadded, field: "image"), bytes, "length \(length), URL-safe, unpadded")

            var spaced = ""
            for (i, c) in standard.enumerated() {
                spaced.append(c)
                if i % 7 == 3 { spaced.append(i % 2 == 0 ? "\r\n" : " \t") }
            }
            XCTAssertEqual(try Base64.decode(spaced + "\n", field: "image"), bytes, "length \(length), with whitespace")
            XCTAssertEqual(try Base64.decode("data:image/jpeg;base64," + standard, field: "image"), bytes, "data URL")
        }
    }

    func testRejectsWithTheCharacterAndOffset() {
        assertBad("QUJD%EVG", contains: "character '%' at offset 4")
        assertBad("data:image/png;base64,QU*C", contains: "character '*' at offset 24")
        assertBad("QUJDé", contains: "byte 0xC3 at offset 4")
        assertBad("QUI=QUJD", contains: "character 'Q' at offset 4, after the padding")
        assertBad("QUJDR", contains: "length does not fit")
        assertBad("QU===", contains: "length does not fit")
        assertBad("QUJD=", contains: "length does not fit")
        assertBad("", contains: "is empty")
        assertBad(" \n ", contains: "is empty")
    }

    private func assertBad(_ text: String, contains expected: String, line: UInt = #line) {
        XCTAssertThrowsError(try Base64.decode(text, field: "image"), line: line) { error in
            guard let rpc = error as? RPCError else { return XCTFail("not an RPCError: \(error)", line: line) }
            XCTAssertEqual(rpc.code, -32602, line: line)
            XCTAssertTrue(rpc.message.contains(expected) && rpc.message.contains("\"image\""), "\(rpc.message) lacks \(expected)", line: line)
            XCTAssertEqual(rpc.data, .object(["reason": .string("bad_base64")]), line: line)
        }
    }
}
