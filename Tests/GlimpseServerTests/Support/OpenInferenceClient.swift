import Foundation
import GlimpseRPC
import XCTest

/// Open Inference Protocol calls with curl, and what `classify` says of the same photo to compare with.
enum OIP {
    /// A v2 JSON infer body: the image as a base64 BYTES element, the top `classes` classes.
    static func jsonInferBody(image: Data, output: String, classes: Int, marked: Bool = true) -> Data {
        var input: [String: JSONValue] = ["name": "image", "datatype": "BYTES", "shape": [1],
                                          "data": [.string(image.base64EncodedString())]]
        if marked { input["parameters"] = ["content_type": "base64"] }
        let body: JSONValue = ["id": "curl-1", "inputs": [.object(input)],
                               "outputs": [["name": .string(output), "parameters": ["classification": .int(classes)]]]]
        return Data(body.serialized())
    }

    /// `(index, score)` of each `"score:index:label"` element.
    static func classes(_ elements: [JSONValue]) -> [(index: Int, score: Double)] {
        elements.compactMap { e in
            let parts = (e.stringValue ?? "").split(separator: ":", maxSplits: 2)
            guard parts.count >= 2, let score = Double(parts[0]), let index = Int(parts[1]) else { return nil }
            return (index, score)
        }
    }

    /// Top-k `(index, score)` of a JSON-RPC `classify` of `image` over h2c.
    static func classify(base: String, image: Data, model: String, topK: Int = 5, token: String? = nil) throws -> [(index: Int, score: Double)] {
        let extra = token.map { ["-H", "Authorization: Bearer \($0)"] } ?? []
        let reply = try ExternalClient.curl(base + "/rpc", body: RPC.classifyBody(image: image, model: model, topK: topK), extra: extra)
        let json = try JSONValue.parse([UInt8](reply.body))
        guard case .array(let predictions)? = json["result"]?["predictions"] else {
            throw ExternalClient.ClientError(description: "classify failed: \(String(decoding: reply.body, as: UTF8.self))")
        }
        return predictions.compactMap { p in p["index"]?.intValue.flatMap { i in p["score"]?.doubleValue.map { (i, $0) } } }
    }

    /// Same indices in the same order, scores within a relative tolerance.
    static func assertSameClasses(_ a: [(index: Int, score: Double)], _ b: [(index: Int, score: Double)], _ what: String,
                                  file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.map(\.index), b.map(\.index), what, file: file, line: line)
        for (x, y) in zip(a, b) {
            XCTAssertEqual(x.score, y.score, accuracy: 1e-4 * max(1, abs(y.score)), what, file: file, line: line)
        }
    }
}
