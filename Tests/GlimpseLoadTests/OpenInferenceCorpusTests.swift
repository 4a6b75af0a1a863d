@testable import GlimpseLoad
import Foundation
import XCTest

/// The requests of `--protocol v2`: a JSON header, the image as one BYTES element, the header's length.
final class OpenInferenceCorpusTests: XCTestCase {
    func testBodyIsHeaderThenLengthThenImage() throws {
        let image: [UInt8] = [0xFF, 0xD8, 0xFF, 0x00, 0x42]
        let options = ClassifyOptions(model: "squeeze net", topK: 3, crop: "fit", deadlineMs: 250)
        let corpus = RequestCorpus.openInference(images: [image, image + [1]], options: options,
                                                 names: V2TensorNames(input: "image", output: "out"))
        XCTAssertEqual(corpus.path, "/v2/models/squeeze%20net/infer")
        XCTAssertEqual(corpus.bodies.count, 2)
        let request = corpus.request(0, authority: "localhost")
        guard let length = request.headers.first(where: { $0.0 == "inference-header-content-length" }).flatMap({ Int($0.1) }),
              let body = request.body else { return XCTFail("no header length or body: \(request.headers)") }
        XCTAssertEqual(Array(body[length...]), [5, 0, 0, 0] + image)
        let header = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(body[..<length])) as? [String: Any])
        let input = try XCTUnwrap((header["inputs"] as? [[String: Any]])?.first)
        XCTAssertEqual(input["name"] as? String, "image")
        XCTAssertEqual(input["datatype"] as? String, "BYTES")
        XCTAssertEqual(input["shape"] as? [Int], [1])
        XCTAssertEqual((input["parameters"] as? [String: Any])?["binary_data_size"] as? Int, 9)
        let output = try XCTUnwrap((header["outputs"] as? [[String: Any]])?.first)
        XCTAssertEqual(output["name"] as? String, "out")
        XCTAssertEqual((output["parameters"] as? [String: Any])?["classification"] as? Int, 3)
        XCTAssertEqual((output["parameters"] as? [String: Any])?["binary_data"] as? Bool, false)
        XCTAssertEqual((header["parameters"] as? [String: Any])?["crop"] as? String, "fit")
        XCTAssertEqual((header["parameters"] as? [String: Any])?["deadline_ms"] as? Int, 250)
        // Each body carries its own header length ("binary_data_size":10 is one byte longer than 9).
        let second = corpus.request(1, authority: "localhost")
        XCTAssertEqual(second.headers.first { $0.0 == "inference-header-content-length" }?.1, String(length + 1))
        XCTAssertEqual(second.body?.count, length + 1 + 4 + 6)
        XCTAssertEqual(corpus.request(3, authority: "localhost").headers.filter { $0.0 == "inference-header-content-length" }.count, 1)
    }
}
