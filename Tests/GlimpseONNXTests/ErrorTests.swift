import GlimpseEngine
import GlimpseONNX
import GlimpseTensor
import GlimpseTestSupport
import XCTest

/// Malformed files and unsupported content must throw clear errors, never trap.
final class ErrorTests: XCTestCase {
    func testTruncatedFilesThrow() throws {
        let bytes = try SharedData.bytes("models/mnist-8.onnx")
        for cut in [1, 7, 100, 1000, bytes.count / 2, bytes.count - 3] {
            XCTAssertThrowsError(try ONNXLoader.load(bytes: Array(bytes[..<cut]), name: "mnist-cut")) { e in
                XCTAssertTrue("\(e)".contains("mnist-cut"), "\(e)")
            }
        }
    }

    func testGarbageThrows() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            let bytes = (0..<256).map { _ in UInt8.random(in: 0...255, using: &rng) }
            XCTAssertThrowsError(try ONNXLoader.load(bytes: bytes, name: "garbage"))
        }
        XCTAssertThrowsError(try ONNXLoader.load(bytes: [], name: "empty"))
    }

    func testMissingFileThrows() {
        XCTAssertThrowsError(try ONNXLoader.load(path: "/nonexistent/model.onnx")) { e in
            XCTAssertTrue("\(e)".contains("/nonexistent/model.onnx"))
        }
    }

    func testWrongInputShapeThrows() throws {
        let m = try ONNXLoader.load(path: try SharedData.path("models/mnist-8.onnx"))
        XCTAssertThrowsError(try m.run([Tensor(shape: [1, 1, 27, 28])]))
        XCTAssertThrowsError(try m.run([]))
    }
}

final class UnsupportedOperatorTests: XCTestCase {
    /// mnist-8 with its "Relu" op types renamed to "Relx": the error names op, node and model.
    func testUnsupportedOperatorIsNamed() throws {
        var bytes = try SharedData.bytes("models/mnist-8.onnx")
        let relu = Array("Relu".utf8)
        var replaced = 0
        for i in 0..<(bytes.count - 4) where Array(bytes[i..<(i + 4)]) == relu && bytes[i - 1] == 4 && bytes[i - 2] == 0x22 {
            bytes[i + 3] = UInt8(ascii: "x")
            replaced += 1
        }
        XCTAssertGreaterThan(replaced, 0)
        XCTAssertThrowsError(try ONNXLoader.load(bytes: bytes, name: "mnist-patched")) { e in
            let text = "\(e)"
            XCTAssertTrue(text.contains("Relx") && text.contains("mnist-patched") && text.contains("ReLU"), text)
        }
    }
}
