import Foundation
import GlimpseEngine
import GlimpseONNX
import GlimpseTensor
import GlimpseTestSupport
import Synchronization
import XCTest

/// End-to-end parity with onnxruntime's reference outputs in ../shared/reference.
final class ModelParityTests: XCTestCase {
    /// Runs `model` on reference/<ref>/input.npy (several items, run as one batch) and compares with
    /// output.npy.
    func checkReference(model: String, reference: String, threads: Int = 1, tolerance: Float = 1e-4,
                        file: StaticString = #filePath, line: UInt = #line) throws -> Float {
        let options = EngineOptions(threads: threads, batchSplitting: .never)
        let compiled = try ONNXLoader.load(path: try SharedData.path("models/\(model)"), options: options)
        let input = try SharedData.npy("reference/\(reference)/input.npy")
        let expected = try SharedData.npy("reference/\(reference)/output.npy")
        let out = try compiled.run([input])
        XCTAssertEqual(out[0].shape, expected.shape, file: file, line: line)
        let err = relativeError(out[0].floats(), expected.floats())
        XCTAssertLessThan(err, tolerance, "\(model): relative error \(err)", file: file, line: line)
        print("parity \(model) threads=\(threads): max-abs-diff/max-abs-ref = \(err)")
        return err
    }

    func testSqueezeNetMatchesOnnxRuntime() throws {
        _ = try checkReference(model: "squeezenet1.1.onnx", reference: "squeezenet1.1")
    }

    func testSqueezeNetTwoThreads() throws {
        _ = try checkReference(model: "squeezenet1.1.onnx", reference: "squeezenet1.1", threads: 2)
    }

    func testSqueezeNetSpecs() throws {
        let m = try ONNXLoader.load(path: try SharedData.path("models/squeezenet1.1.onnx"))
        XCTAssertEqual(m.inputs, [TensorSpec(name: "data", shape: [-1, 3, 224, 224], dtype: .float32)])
        XCTAssertEqual(m.outputs.first?.shape, [-1, 1000])
    }

    /// Batch items are independent: item i of a batch equals a batch of one.
    func testBatchMatchesSingleItems() throws {
        let m = try ONNXLoader.load(path: try SharedData.path("models/squeezenet1.1.onnx"),
                                    options: EngineOptions(batchSplitting: .never))
        let input = try SharedData.npy("reference/squeezenet1.1/input.npy")
        let batch = try m.run([input])[0]
        let one = Tensor(shape: [1, 3, 224, 224], dtype: .float32)
        one.rawPointer.copyMemory(from: input.item(2).rawPointer, byteCount: one.byteCount)
        let single = try m.run([one])[0]
        XCTAssertLessThan(relativeError(single.floats(), Array(batch.floats()[2000..<3000])), 1e-5)
    }

    /// The same with residual adds, 7×7 planes (batch folded into the 1×1 GEMMs, tiles straddling
    /// images) and depthwise layers: MobileNetV2, batch of 3 distinct images.
    func testBatchMatchesSingleItemsWithFoldedPointwise() throws {
        let m = try ONNXLoader.load(path: try SharedData.path("models/arch/mobilenet_v2.onnx"),
                                    options: EngineOptions(batchSplitting: .never))
        let input = Tensor(shape: [3, 3, 224, 224], dtype: .float32)
        for i in 0..<input.count { input.f32[i] = Float((i * 7919) % 1000) / 500 - 1 }
        let batch = try m.run([input])[0]
        for item in 0..<3 {
            let one = Tensor(shape: [1, 3, 224, 224], dtype: .float32)
            one.rawPointer.copyMemory(from: input.item(item).rawPointer, byteCount: one.byteCount)
            let single = try m.run([one])[0]
            XCTAssertLessThan(relativeError(single.floats(), Array(batch.floats()[(item * 1000)..<(item * 1000 + 1000)])), 1e-5)
        }
    }

    func testConcurrentRuns() throws {
        let m = try ONNXLoader.load(path: try SharedData.path("models/squeezenet1.1.onnx"), options: EngineOptions(threads: 2))
        let input = try SharedData.npy("reference/squeezenet1.1/input.npy")
        let expected = try SharedData.npy("reference/squeezenet1.1/output.npy").floats()
        let errors = Mutex<[Float]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let e = (try? m.run([input])[0].floats()).map { relativeError($0, expected) } ?? .infinity
            errors.withLock { $0.append(e) }
        }
        XCTAssertEqual(errors.withLock { $0.count }, 4)
        XCTAssertTrue(errors.withLock { $0.allSatisfy { $0 < 1e-4 } }, "\(errors.withLock { $0 })")
    }

    /// mnist-8 on a real handwritten 9 (28×28 8-bit BMP, white on black, raw 0–255).
    func testMnistRecognizesDigit() throws {
        let m = try ONNXLoader.load(path: try SharedData.path("models/mnist-8.onnx"))
        XCTAssertEqual(m.inputs.first?.shape, [1, 1, 28, 28])
        let bmp = try SharedData.bytes("images/digits/coral_9.bmp")
        let offset = Int(bmp[10]) | Int(bmp[11]) << 8
        let input = Tensor(shape: [1, 1, 28, 28], dtype: .float32)
        for row in 0..<28 {
            for col in 0..<28 {
                let index = Int(bmp[offset + (27 - row) * 28 + col])  // bottom-up rows
                input.f32[row * 28 + col] = Float(bmp[54 + index * 4])  // grey palette
            }
        }
        let logits = try m.run([input])[0].floats()
        XCTAssertEqual(argmax(logits[...]), 9, "logits \(logits)")
    }
}
