import Foundation
import GlimpseEngine
import GlimpseImage
import GlimpseONNX
import GlimpseTensor

/// Writes static int8 variants of float32 ONNX models as standard QDQ ONNX (the format of
/// onnxruntime's `quantize_static`, which onnxruntime and Glimpse both run):
///
/// - weights: int8, symmetric per output channel (`[-127, 127]`, zero point 0), as
///   `DequantizeLinear(W_quantized, W_scale, W_zero_point, axis)` whose output keeps the weight's name;
/// - biases of quantized ops: int32 in units of `sx·sw[c]`, as `DequantizeLinear(B_quantized, B_scale,
///   axis 0)`, so an int8 engine adds them to its int32 sums unchanged;
/// - activations (`StaticQuantizationPlan`): uint8 per tensor, asymmetric, from the range calibration
///   gives (`ActivationCalibrator`, widened to contain 0 so that zero and padding are exact), as
///   `QuantizeLinear` → `DequantizeLinear` placed right after the tensor's producer; every reader reads
///   the dequantized copy.
///
/// The rewrite keeps every other field of the file byte for byte. Needs opset 13 (per-channel
/// `DequantizeLinear`).
public enum StaticQuantizer {
    /// What was quantized besides the weights.
    public struct Summary: Sendable {
        /// Activation tensors with a QuantizeLinear/DequantizeLinear pair.
        public var activations: Int
        /// Of those, tensors measured by calibration (the others share a measured tensor's parameters).
        public var calibrated: Int
        /// Relu nodes folded into a uint8 quantization with zero point 0.
        public var droppedRelus: Int
        public var biases: Int
        public var calibrationInputs: Int
        public var method: CalibrationMethod
    }

    /// Quantizes a model held in memory, calibrating on `inputs` (batch-1 tensors preprocessed as the
    /// model expects). `name` is used in error messages. `concatSharesOutput`: Concat inputs take the
    /// Concat output's parameters where that is exact (`StaticQuantizationPlan`).
    public static func quantize(_ bytes: [UInt8], name: String, calibration inputs: [Tensor],
                                method: CalibrationMethod = .minMax, concatSharesOutput: Bool = false,
                                threads: Int = 1) throws -> (model: QuantizedModel, summary: Summary) {
        let file = try ONNXModelFile(bytes: bytes, name: name)
        guard file.opset >= 13 else {
            throw QuantizationError(.unsupportedModel, "\(name): per-channel DequantizeLinear needs opset 13 or later; the model has opset \(file.opset)")
        }
        guard !inputs.isEmpty else {
            throw QuantizationError(.invalidArgument, "\(name): int8-static needs at least one calibration image")
        }
        let plan = try StaticQuantizationPlan(file, concatSharesOutput: concatSharesOutput)
        guard !plan.ops.isEmpty else {
            throw QuantizationError(.unsupportedModel, "\(name): no Conv, Gemm or MatMul with float32 weights to quantize")
        }
        let ranges = try ActivationCalibrator.ranges(of: plan.calibrated, model: bytes, name: name, inputs: inputs,
                                                     method: method, threads: threads)

        let qdq = try StaticRewrite.activationQDQ(plan, ranges: ranges, name: name)
        var rewrite = StaticRewrite(file)
        rewrite.addActivationPairs(qdq)
        let inputScale = Dictionary(qdq.map { ($0.activation.name, $0.scale) }, uniquingKeysWith: { a, _ in a })

        // Weights (once each) and biases (once per op reading them).
        var initializerByName: [String: ONNXModelFile.Initializer] = [:]
        for t in file.initializers { initializerByName[t.name] = t }
        for op in plan.ops {
            guard let t = initializerByName[op.weight] else { continue }
            if rewrite.weightScales[t.name] == nil { try rewrite.quantizeWeight(t, axis: op.axis) }
            let x = file.nodes[op.node].inputs[0]
            guard let biasName = op.bias, let b = initializerByName[biasName], let sx = inputScale[x],
                  let sw = rewrite.weightScales[t.name] else { continue }
            try rewrite.quantizeBias(b, node: op.node, inputScale: sx, weightScales: sw)
        }

        let droppedNodes = Set(plan.activations.compactMap(\.droppedRelu).map { file.nodes[$0].fieldIndex })
        let droppedNames = Set(plan.activations.filter { $0.droppedRelu != nil }.map(\.name))
        let graph = try rewrite.graph(droppedNodes: droppedNodes, droppedNames: droppedNames)
        let summary = Summary(activations: qdq.count, calibrated: plan.calibrated.count,
                              droppedRelus: droppedNames.count, biases: rewrite.biases, calibrationInputs: inputs.count, method: method)
        let note = "int8-static: \(rewrite.summaries.count) weight tensors int8 symmetric per output channel, \(rewrite.biases) biases int32, "
            + "\(qdq.count) activation tensors uint8 per tensor (calibration: \(method), \(inputs.count) inputs)"
        var kept = 0
        for t in file.initializers where t.dataType == 1 && !rewrite.replacedNames.contains(t.name) { kept += t.count }
        let model = QuantizedModel(mode: .int8Static, bytes: file.model(graph: graph, quantizationNote: note),
                                   tensors: rewrite.summaries, keptFloatElements: kept)
        return (model, summary)
    }

    /// Reads `inputPath`, quantizes it with `inputs` as calibration data, checks that the variant loads
    /// in Glimpse's engine (unless `verify` is false) and writes it to `outputPath`.
    @discardableResult
    public static func quantizeFile(at inputPath: String, to outputPath: String, calibration inputs: [Tensor],
                                    method: CalibrationMethod = .minMax, concatSharesOutput: Bool = false,
                                    threads: Int = 1, verify: Bool = true) throws -> (model: QuantizedModel, summary: Summary) {
        guard let data = FileManager.default.contents(atPath: inputPath) else {
            throw QuantizationError(.io, "cannot read model file \(inputPath)")
        }
        let name = ((inputPath as NSString).lastPathComponent as NSString).deletingPathExtension
        let result = try quantize([UInt8](data), name: name, calibration: inputs, method: method,
                                  concatSharesOutput: concatSharesOutput, threads: threads)
        if verify {
            do {
                _ = try ONNXLoader.load(bytes: result.model.bytes, name: "\(name) (int8-static)")
            } catch {
                throw QuantizationError(.verificationFailed, "the int8-static variant of \(name) does not load in the engine: \(error)")
            }
        }
        do {
            try Data(result.model.bytes).write(to: URL(fileURLWithPath: outputPath), options: .atomic)
        } catch {
            throw QuantizationError(.io, "cannot write \(outputPath): \(error.localizedDescription)")
        }
        return result
    }

    /// uint8 scale and zero point for a range: widened to contain 0, `scale = (hi − lo)/255`,
    /// `zero_point = round(−lo/scale)`; an empty range gets scale 1 (everything is 0).
    static func uint8Parameters(lower: Float, upper: Float) -> (scale: Float, zeroPoint: UInt8) {
        let lo = min(lower, 0), hi = max(upper, 0)
        guard hi - lo > 0, (hi - lo).isFinite else { return (1, 0) }
        let scale = (hi - lo) / 255
        let zp = (-lo / scale).rounded(.toNearestOrEven)
        return (scale, UInt8(min(255, max(0, zp))))
    }
}

extension StaticQuantizer {
    /// Calibration inputs from a folder of JPEG/PNG files (sorted by name, at most `limit`, spread
    /// evenly over the folder), preprocessed with `preprocessing` into batch-1 tensors; the model at
    /// `modelPath` checks that they match its input. Also returns the files skipped, with the reason.
    public static func calibrationInputs(folder: String, modelPath: String, preprocessing: Preprocessing,
                                         limit: Int? = nil) throws -> (inputs: [Tensor], skipped: [String]) {
        let model: CompiledModel
        do {
            model = try ONNXLoader.load(path: modelPath)
        } catch {
            throw QuantizationError(.verificationFailed, "cannot load \(modelPath): \(error)")
        }
        return try calibrationInputs(folder: folder, model: model, preprocessing: preprocessing, limit: limit)
    }

    /// The same, for a model already loaded (an encrypted one is decrypted in memory, never read by path).
    public static func calibrationInputs(folder: String, model: CompiledModel, preprocessing: Preprocessing,
                                         limit: Int? = nil) throws -> (inputs: [Tensor], skipped: [String]) {
        let (prepared, skipped) = try QuantizationReport.preprocessImages(folder, spec: preprocessing, model: model)
        return (spread(prepared.map(\.tensor), limit: limit), skipped)
    }

    /// At most `limit` elements taken at even strides (all of them without a limit).
    public static func spread<T>(_ items: [T], limit: Int?) -> [T] {
        guard let limit, limit > 0, items.count > limit else { return items }
        return (0..<limit).map { items[$0 * items.count / limit] }
    }
}
