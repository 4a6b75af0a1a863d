import GlimpseRPC
import GlimpseServing
import XCTest

/// Parsing of Open Inference Protocol (KServe v2) infer requests: JSON and the binary data extension.
final class OpenInferenceRequestTests: XCTestCase {
    let limits = ServingConfiguration()

    func littleEndian(_ n: Int) -> [UInt8] { (0..<4).map { UInt8((n >> (8 * $0)) & 0xff) } }

    /// A body with a JSON header followed by `tail`, and the header's length.
    func binaryBody(_ header: JSONValue, tail: [UInt8]) -> (body: [UInt8], headerLength: Int) {
        let json = header.serialized()
        return (json + tail, json.count)
    }

    func testBinaryBytesElementsAreLengthPrefixed() throws {
        let a: [UInt8] = [1, 2, 3], b: [UInt8] = [9]
        let tail = littleEndian(a.count) + a + littleEndian(b.count) + b
        let header: JSONValue = ["id": "7", "inputs": [["name": "image", "datatype": "BYTES", "shape": [2],
                                                        "parameters": ["binary_data_size": .int(tail.count)]]],
                                 "outputs": [["name": "out", "parameters": ["classification": 3, "binary_data": true]]]]
        let (body, length) = binaryBody(header, tail: tail)
        let r = try V2InferRequest(body: body, headerLength: length, model: "squeezenet1.1", limits: limits)
        XCTAssertEqual(r.params.request.images, [a, b])
        XCTAssertEqual(r.params.request.model, "squeezenet1.1")
        XCTAssertEqual(r.params.request.topK, 3)
        XCTAssertEqual(r.id, "7")
        XCTAssertEqual(r.outputs, [V2RequestedOutput(name: "out", binary: true, classification: 3)])
    }

    func testJSONBytesNeedBase64ContentType() throws {
        let unmarked: JSONValue = ["inputs": [["name": "image", "datatype": "BYTES", "shape": [1], "data": ["AQID"]]]]
        XCTAssertThrowsError(try V2InferRequest(body: unmarked.serialized(), headerLength: nil, model: "m", limits: limits)) { error in
            let e = error as? RPCError
            XCTAssertEqual(e?.code, RPCError.invalidParamsCode)
            XCTAssertTrue(e?.message.contains("content_type") ?? false, "\(String(describing: e))")
        }
        let marked: JSONValue = ["inputs": [["name": "image", "datatype": "BYTES", "shape": [1], "data": ["AQID"],
                                             "parameters": ["content_type": "base64"]]]]
        let r = try V2InferRequest(body: marked.serialized(), headerLength: nil, model: "m", limits: limits)
        XCTAssertEqual(r.params.request.images, [[1, 2, 3]])
        let requestLevel: JSONValue = ["parameters": ["content_type": "base64", "timeout": 250_000],
                                       "inputs": [["name": "image", "datatype": "BYTES", "shape": [1], "data": ["AQID"]]]]
        let r2 = try V2InferRequest(body: requestLevel.serialized(), headerLength: nil, model: "m", limits: limits)
        XCTAssertEqual(r2.params.request.images, [[1, 2, 3]])
        XCTAssertEqual(r2.params.request.deadlineMs ?? 0, 250, accuracy: 1e-9)
    }

    func testFP32TensorSplitsIntoItems() throws {
        let values: [Float] = (0..<12).map { Float($0) / 4 }
        var tail: [UInt8] = []
        for v in values { tail += littleEndian(Int(v.bitPattern)) }
        let header: JSONValue = ["inputs": [["name": "data", "datatype": "FP32", "shape": [2, 3, 2, 1],
                                             "parameters": ["binary_data_size": .int(tail.count)]]]]
        let (body, length) = binaryBody(header, tail: tail)
        let r = try V2InferRequest(body: body, headerLength: length, model: "m", limits: limits)
        XCTAssertEqual(r.params.request.pixels, [Array(values[0..<6]), Array(values[6..<12])])
        XCTAssertEqual(r.params.request.pixelShape, [3, 2, 1])
        XCTAssertTrue(r.params.request.images.isEmpty)

        let nested: JSONValue = ["inputs": [["name": "data", "datatype": "FP32", "shape": [1, 2, 2],
                                             "data": [[[0.5, 1], [1.5, 2]]]]]]
        let j = try V2InferRequest(body: nested.serialized(), headerLength: nil, model: "m", limits: limits)
        XCTAssertEqual(j.params.request.pixels, [[0.5, 1, 1.5, 2]])
    }

    func testMalformedRequestsAreRefusedWithInvalidParams() {
        let cases: [(String, [UInt8], Int?)] = [
            ("not json", Array("{".utf8), nil),
            ("header longer than body", Array("{}".utf8), 10),
            ("no inputs", JSONValue.object(["inputs": []]).serialized(), nil),
            ("unknown datatype", JSONValue.object(["inputs": [["name": "x", "datatype": "INT64", "shape": [1], "data": [1]]]]).serialized(), nil),
            ("count mismatch", JSONValue.object(["inputs": [["name": "x", "datatype": "FP32", "shape": [1, 3], "data": [1, 2]]]]).serialized(), nil),
            ("batch zero", JSONValue.object(["inputs": [["name": "x", "datatype": "FP32", "shape": [0, 3], "data": []]]]).serialized(), nil),
            ("bad classification", JSONValue.object(["inputs": [["name": "x", "datatype": "FP32", "shape": [1, 1], "data": [1]]],
                                                     "outputs": [["name": "o", "parameters": ["classification": 0]]]]).serialized(), nil),
        ]
        for (name, body, length) in cases {
            XCTAssertThrowsError(try V2InferRequest(body: body, headerLength: length, model: "m", limits: limits), name) { error in
                XCTAssertNotNil(error as? RPCError, name)
            }
        }
        // A BYTES element that claims more bytes than follow, and binary data nobody accounts for.
        let short = littleEndian(100) + [1, 2]
        let header: JSONValue = ["inputs": [["name": "image", "datatype": "BYTES", "shape": [1],
                                             "parameters": ["binary_data_size": .int(short.count)]]]]
        let (body, length) = binaryBody(header, tail: short)
        XCTAssertThrowsError(try V2InferRequest(body: body, headerLength: length, model: "m", limits: limits))
        let (extra, extraLength) = binaryBody(header, tail: littleEndian(1) + [7, 0, 0])
        XCTAssertThrowsError(try V2InferRequest(body: extra, headerLength: extraLength, model: "m", limits: limits))
    }
}
