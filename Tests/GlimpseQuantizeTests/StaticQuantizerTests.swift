import Foundation
import GlimpseEngine
import GlimpseImage
import GlimpseModelTools
import GlimpseONNX
@testable import GlimpseQuantize
import GlimpseTensor
import GlimpseTestSupport
import XCTest

/// `StaticQuantizer` on the embedded digits-large model: calibrated on MNIST training images, the
/// QDQ variant loads in Glimpse, agrees with the float32 model on MNIST test images, and runs in
/// onnxruntime with the same answers as in Glimpse.
final class StaticQuantizerTests: XCTestCase {
    /// digits-large's preprocessing (models/models.json).
    static let digits = Preprocessing(width: 28, height: 28, resizeShortSide: nil, crop: .fill, channelOrder: .gray,
                                      scale: 1.0 / 255.0, mean: [0.1307], std: [0.3081])

    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    var workDir: URL!

    override func setUpWithError() throws {
        workDir = try temporaryFolder("static").url
    }

    /// cifar10-large's preprocessing (models/models.json).
    static let cifar10 = Preprocessing(width: 32, height: 32, resizeShortSide: nil, crop: .center, channelOrder: .rgb,
                                       scale: 1.0 / 255.0, mean: [0.4914, 0.4822, 0.4465], std: [0.247, 0.2435, 0.2616])

    /// `count` images of a shared data set, spread over it, preprocessed with `spec`.
    func images(_ relative: String, count: Int, spec: Preprocessing) throws -> [Tensor] {
        let samples = StaticQuantizer.spread(try EvalDataset.load(try SharedData.path(relative)).samples, limit: count)
        return try samples.map { s in
            let t = Tensor(shape: Shape([1, spec.channels, spec.height, spec.width]), dtype: .float32)
            try Evaluator.preprocess(s, spec: spec, into: t.rawPointer)
            return t
        }
    }

    /// `count` MNIST images of a split, spread over it, preprocessed as digits-large expects.
    func mnist(_ split: String, count: Int) throws -> [Tensor] {
        try images("datasets/mnist/\(split)-images-idx3-ubyte.gz", count: count, spec: Self.digits)
    }

    /// One batch of `inputs` (each [1, …]) as a [n, …] tensor.
    func batch(_ inputs: [Tensor]) -> Tensor {
        var dims = inputs[0].shape.dims
        dims[0] = inputs.count
        let out = Tensor(shape: Shape(dims), dtype: .float32)
        let n = inputs[0].count
        for (i, t) in inputs.enumerated() { (out.f32 + i * n).update(from: t.f32, count: n) }
        return out
    }

    func top1(_ model: CompiledModel, _ inputs: [Tensor]) throws -> [Int] {
        try inputs.map { QuantizationReport.argmax(try model.run([$0])[0].floats()) }
    }

    func quantizeDigits(method: CalibrationMethod) throws -> (path: String, summary: StaticQuantizer.Summary, model: QuantizedModel) {
        let source = Self.repositoryRoot.appendingPathComponent("models/digits-large.onnx").path
        let out = workDir.appendingPathComponent("digits-large-int8-static.onnx").path
        let (model, summary) = try StaticQuantizer.quantizeFile(at: source, to: out, calibration: try mnist("train", count: 300), method: method)
        return (out, summary, model)
    }

    func testDigitsVariantLoadsAndAgreesWithFloat32() throws {
        let (path, summary, model) = try quantizeDigits(method: .percentile(99.99))
        // digits-large: 2 Conv + 2 Gemm, each Relu'd but the last.
        XCTAssertEqual(model.tensors.count, 4)
        XCTAssertEqual(summary.biases, 4)
        XCTAssertEqual(summary.droppedRelus, 3)
        // Conv inputs and outputs, the Gemms' inputs and the hidden Gemm's output; the MaxPool and
        // Flatten outputs share their inputs' parameters.
        XCTAssertEqual(summary.activations, 7)
        XCTAssertEqual(summary.calibrated, 4)
        XCTAssertEqual(model.keptFloatElements, 0)
        let fp32 = try ONNXLoader.load(path: Self.repositoryRoot.appendingPathComponent("models/digits-large.onnx").path)
        let int8 = try ONNXLoader.load(path: path)
        let test = try mnist("t10k", count: 500)
        let a = try top1(fp32, test), b = try top1(int8, test)
        let agree = zip(a, b).filter { $0 == $1 }.count
        XCTAssertGreaterThanOrEqual(agree, 495, "top-1 agreement with float32 on 500 MNIST test images: \(agree)")
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber).intValue
        XCTAssertLessThan(size, 300_000, "int8 weights: about a quarter of the 1.0 MB float32 file")
    }

    func testMinMaxCalibrationAlsoAgrees() throws {
        let (path, _, _) = try quantizeDigits(method: .minMax)
        let fp32 = try ONNXLoader.load(path: Self.repositoryRoot.appendingPathComponent("models/digits-large.onnx").path)
        let int8 = try ONNXLoader.load(path: path)
        let test = try mnist("t10k", count: 200)
        let agree = zip(try top1(fp32, test), try top1(int8, test)).filter { $0 == $1 }.count
        XCTAssertGreaterThanOrEqual(agree, 197)
    }

    /// onnxruntime (its QDQ fusions run the convolutions on int8) and Glimpse run the written file on
    /// the same inputs: the same top-1 on every image, logits within a few output quantization steps.
    func checkOnnxruntimeAgrees(variant path: String, inputs test: [Tensor], classes: Int,
                                file: StaticString = #filePath, line: UInt = #line) throws {
        let input = batch(test)
        let ort = try Onnxruntime.run(model: path, input: input, folder: workDir)
        XCTAssertEqual(ort.count, test.count * classes, file: file, line: line)
        guard ort.count == test.count * classes else { return }
        let log = "onnxruntime"

        let glimpse = try ONNXLoader.load(path: path)
        var sameTop1 = 0, maxDiff: Float = 0, maxLogit: Float = 0
        for (i, x) in test.enumerated() {
            let g = try glimpse.run([x])[0].floats()
            let o = Array(ort[(i * classes)..<((i + 1) * classes)])
            if QuantizationReport.argmax(g) == QuantizationReport.argmax(o) { sameTop1 += 1 }
            for j in 0..<classes {
                maxDiff = max(maxDiff, abs(g[j] - o[j]))
                maxLogit = max(maxLogit, abs(o[j]))
            }
        }
        XCTAssertEqual(sameTop1, test.count, "top-1 equal to onnxruntime's (\(log))", file: file, line: line)
        XCTAssertLessThan(maxDiff, 0.02 * maxLogit, "max |Δlogit| \(maxDiff), max |logit| \(maxLogit)", file: file, line: line)
    }

    func testOnnxruntimeRunsTheDigitsVariantLikeGlimpse() throws {
        let (path, _, _) = try quantizeDigits(method: .percentile(99.99))
        try checkOnnxruntimeAgrees(variant: path, inputs: try mnist("t10k", count: 200), classes: 10)
    }

    /// cifar10-large: residual Adds, and two passes (image and mirror image) sharing weights and
    /// biases, so each bias gets one int32 copy per pass.
    func testOnnxruntimeRunsTheCIFAR10VariantLikeGlimpse() throws {
        let source = Self.repositoryRoot.appendingPathComponent("models/cifar10-large.onnx").path
        let out = workDir.appendingPathComponent("cifar10-large-int8-static.onnx").path
        let calibration = try images("datasets/cifar10-jpeg/train.tar", count: 100, spec: Self.cifar10)
        let (model, summary) = try StaticQuantizer.quantizeFile(at: source, to: out, calibration: calibration)
        XCTAssertEqual(model.tensors.count, 9)
        XCTAssertEqual(summary.biases, 18, "9 biases, one copy per pass")
        let test = try images("datasets/cifar10-jpeg/test.tar", count: 100, spec: Self.cifar10)
        let fp32 = try ONNXLoader.load(path: source), int8 = try ONNXLoader.load(path: out)
        let agree = zip(try top1(fp32, test), try top1(int8, test)).filter { $0 == $1 }.count
        XCTAssertGreaterThanOrEqual(agree, 95, "top-1 agreement with float32 on 100 CIFAR-10 test images")
        try checkOnnxruntimeAgrees(variant: out, inputs: test, classes: 10)
    }

    /// SqueezeNet 1.1: every Conv quantized and its Relu folded; Concat inputs share the Concat
    /// output's parameters only when asked, and only where the Concat feeds a quantized op directly.
    func testSqueezeNetPlan() throws {
        let bytes = try SharedData.bytes("models/squeezenet1.1.onnx")
        let file = try ONNXModelFile(bytes: bytes, name: "squeezenet1.1")
        let plan = try StaticQuantizationPlan(file)
        XCTAssertEqual(plan.ops.count, 26)
        XCTAssertEqual(plan.ops.filter { $0.bias != nil }.count, 26)
        XCTAssertEqual(plan.activations.filter { $0.droppedRelu != nil }.count, 26)
        XCTAssertEqual(plan.activations.count, 36)
        XCTAssertEqual(plan.calibrated.count, 35, "the input, 26 Conv outputs, 6 Concat outputs and the 2 MaxPool outputs after a Concat; the MaxPool output after conv1 shares its input's")
        let shared = try StaticQuantizationPlan(file, concatSharesOutput: true)
        let concatInputs = shared.activations.filter { a in
            a.sharesWith.map { target in file.nodes.contains { $0.opType == "Concat" && $0.outputs == [target] } } ?? false
        }
        XCTAssertEqual(concatInputs.count, 12, "the 6 Concats read by a Conv (2 feed a MaxPool first)")
        XCTAssertTrue(concatInputs.allSatisfy { $0.droppedRelu != nil })
        XCTAssertEqual(shared.calibrated.count, 23)
    }

    func testUInt8ParametersContainZero() {
        let relu = StaticQuantizer.uint8Parameters(lower: 0, upper: 6)
        XCTAssertEqual(relu.zeroPoint, 0)
        XCTAssertEqual(relu.scale, 6 / 255, accuracy: 1e-7)
        let positive = StaticQuantizer.uint8Parameters(lower: 2, upper: 4)
        XCTAssertEqual(positive.zeroPoint, 0, "the range is widened to contain 0")
        let mixed = StaticQuantizer.uint8Parameters(lower: -1, upper: 3)
        XCTAssertEqual(mixed.zeroPoint, 64)
        let empty = StaticQuantizer.uint8Parameters(lower: 0, upper: 0)
        XCTAssertEqual(empty.scale, 1)
    }

    func testPercentileClipsOutliersThatMinMaxKeeps() throws {
        let source = Self.repositoryRoot.appendingPathComponent("models/digits-large.onnx").path
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: source)))
        let plan = try StaticQuantizationPlan(ONNXModelFile(bytes: bytes, name: "digits-large"))
        let inputs = try mnist("train", count: 100)
        let minMax = try ActivationCalibrator.ranges(of: plan.calibrated, model: bytes, name: "digits-large", inputs: inputs,
                                                     method: .minMax, threads: 1)
        let percentile = try ActivationCalibrator.ranges(of: plan.calibrated, model: bytes, name: "digits-large", inputs: inputs,
                                                         method: .percentile(99.9), threads: 1)
        XCTAssertEqual(Set(minMax.keys), Set(plan.calibrated))
        var narrower = 0
        for name in plan.calibrated {
            let m = try XCTUnwrap(minMax[name]), p = try XCTUnwrap(percentile[name])
            XCTAssertEqual(m.lower, m.observedLower)
            XCTAssertEqual(m.upper, m.observedUpper)
            XCTAssertGreaterThanOrEqual(p.lower, m.lower - 1e-6, name)
            XCTAssertLessThanOrEqual(p.upper, m.upper + 1e-6, name)
            if p.upper < m.upper * 0.99 { narrower += 1 }
        }
        XCTAssertGreaterThan(narrower, 0, "99.9% clips the long tail of some activation")
    }

    func testErrors() throws {
        let source = Self.repositoryRoot.appendingPathComponent("models/digits-large.onnx").path
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: source)))
        XCTAssertThrowsError(try StaticQuantizer.quantize(bytes, name: "digits-large", calibration: [])) { e in
            XCTAssertEqual((e as? QuantizationError)?.code, .invalidArgument)
        }
        XCTAssertThrowsError(try StaticQuantizer.quantize([1, 2, 3], name: "junk", calibration: [])) { e in
            XCTAssertEqual((e as? QuantizationError)?.code, .malformedModel)
        }
        // A calibration input of the wrong shape fails as an engine error, not a crash.
        let wrong = Tensor(shape: Shape([1, 3, 28, 28]), dtype: .float32)
        XCTAssertThrowsError(try StaticQuantizer.quantize(bytes, name: "digits-large", calibration: [wrong])) { e in
            XCTAssertEqual((e as? QuantizationError)?.code, .verificationFailed)
        }
        XCTAssertThrowsError(try ModelQuantizer.quantize(bytes, name: "digits-large", mode: .int8Static)) { e in
            XCTAssertEqual((e as? QuantizationError)?.code, .invalidArgument)
        }
        XCTAssertEqual(try QuantizationMode(name: "int8-static"), .int8Static)
        XCTAssertEqual(try CalibrationMethod(name: "minmax"), .minMax)
        XCTAssertThrowsError(try CalibrationMethod(name: "percentile", percentile: 120))
        XCTAssertThrowsError(try CalibrationMethod(name: "entropy"))
    }
}
