import Foundation
import GlimpseEngine
import GlimpseONNX
import GlimpseTensor
import GlimpseTestSupport
import XCTest

/// Parity of every shared model with onnxruntime's outputs (reference/*/output.npy and
/// structure/*_output_0.pb), within 1e-4 relative (max-abs-diff / max-abs-reference).
final class AllModelsParityTests: XCTestCase {
    /// The reference inputs hold 2 to 4 items. They run as one batch (`.never`, the batch kernels and
    /// their split over threads) unless `splitting` says otherwise.
    func reference(_ model: String, _ ref: String, threads: Int = 1, tolerance: Float = 1e-4,
                   splitting: BatchSplitting = .never,
                   file: StaticString = #filePath, line: UInt = #line) throws {
        let options = EngineOptions(threads: threads, batchSplitting: splitting)
        let m = try ONNXLoader.load(path: try SharedData.path("models/\(model)"), options: options)
        let input = try SharedData.npy("reference/\(ref)/input.npy")
        let expected = try SharedData.npy("reference/\(ref)/output.npy")
        let out = try m.run([input])[0]
        XCTAssertEqual(m.splitsBatches(of: input.shape[0], threads: threads), splitting == .always,
                       "\(model): batch split as asked", file: file, line: line)
        XCTAssertEqual(out.shape, expected.shape, file: file, line: line)
        let err = relativeError(out.floats(), expected.floats())
        print("parity \(model): \(err)")
        XCTAssertLessThan(err, tolerance, "\(model)", file: file, line: line)
    }

    func testArchSqueezeNet() throws { try reference("arch/squeezenet1_1.onnx", "arch-squeezenet1_1") }
    func testArchMobileNetV2() throws { try reference("arch/mobilenet_v2.onnx", "arch-mobilenet_v2") }
    func testArchEfficientNetB0() throws { try reference("arch/efficientnet_b0.onnx", "arch-efficientnet_b0") }
    func testArchLeNet() throws { try reference("arch/lenet_mnist.onnx", "arch-lenet_mnist") }
    func testArchMobileNetV2TwoThreads() throws { try reference("arch/mobilenet_v2.onnx", "arch-mobilenet_v2", threads: 2) }
    /// Two threads: squeeze-and-excitation scaling (`Mul`) splits rows, 7×7 and 14×14 planes split rows of C.
    func testArchEfficientNetB0TwoThreads() throws {
        try reference("arch/efficientnet_b0.onnx", "arch-efficientnet_b0", threads: 2)
    }
    /// Two threads: the fire modules' concatenations are written in place at batch 1.
    func testArchSqueezeNetTwoThreads() throws { try reference("arch/squeezenet1_1.onnx", "arch-squeezenet1_1", threads: 2) }
    func testMobileNetV2Int8() throws { try reference("mobilenetv2-int8.onnx", "mobilenetv2-int8") }
    /// Whole batches on two and three threads: pointwise GEMMs whose tile count does not divide by
    /// the threads split their leftover tiles by output rows (a 14×14 plane at batch 2: 13 tiles).
    func testMobileNetV2Int8TwoAndThreeThreads() throws {
        try reference("mobilenetv2-int8.onnx", "mobilenetv2-int8", threads: 2)
        try reference("mobilenetv2-int8.onnx", "mobilenetv2-int8", threads: 3)
    }
    /// Batches split into single items, one per thread (`BatchSplitting.always`).
    func testArchEfficientNetB0SplitBatch() throws {
        try reference("arch/efficientnet_b0.onnx", "arch-efficientnet_b0", threads: 2, splitting: .always)
    }
    func testMobileNetV2Int8SplitBatch() throws {
        try reference("mobilenetv2-int8.onnx", "mobilenetv2-int8", threads: 2, splitting: .always)
    }

    func structure(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let m = try ONNXLoader.load(path: try SharedData.path("models/structure/\(name).onnx"))
        let spec = m.inputs[0]
        let shape = spec.shape.map { $0 < 0 ? 1 : $0 }
        let n = shape.reduce(1, *)
        let input = Tensor(shape: Shape(shape), floats: (0..<n).map { Float($0) / Float(n) })
        let expected = try ONNXLoader.decodeTensorProto(bytes: try SharedData.bytes("models/structure/\(name)_output_0.pb"), name: name)
        let out = try m.run([input])[0]
        XCTAssertEqual(out.count, expected.count, file: file, line: line)
        let err = relativeError(out.floats(), expected.floats())
        print("parity structure/\(name): \(err)")
        XCTAssertLessThan(err, 1e-4, name, file: file, line: line)
    }

    func testLightResNet50() throws { try structure("light_resnet50") }
    func testLightVGG19() throws { try structure("light_vgg19") }
    func testLightInceptionV1() throws { try structure("light_inception_v1") }
    func testLightShuffleNet() throws { try structure("light_shufflenet") }
    func testLightSqueezeNet() throws { try structure("light_squeezenet") }
    func testLightAlexNet() throws { try structure("light_bvlc_alexnet") }
    func testLightZFNet() throws { try structure("light_zfnet512") }
}
