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

        var names = FreshNames(file)

        // Activation parameters.
        struct ActivationQDQ {
            var activation: StaticQuantizationPlan.Activation
            var scale: Float
            var zeroPoint: UInt8
            var dequantized: String = ""
        }
        var params: [String: (scale: Float, zeroPoint: UInt8)] = [:]
        for a in plan.activations where a.sharesWith == nil {
            guard let r = ranges[a.name] else {
                throw QuantizationError(.verificationFailed, "\(name): no calibration range for '\(a.name)'")
            }
            params[a.name] = uint8Parameters(lower: r.lower, upper: r.upper)
        }
        var qdq: [ActivationQDQ] = []
        for a in plan.activations {
            guard let p = params[a.sharesWith ?? a.name] else {
                throw QuantizationError(.verificationFailed, "\(name): no quantization parameters for '\(a.name)'")
            }
            qdq.append(ActivationQDQ(activation: a, scale: p.scale, zeroPoint: p.zeroPoint))
        }

        var newInitializers: [ProtoWriter] = []
        var leadingNodes: [ProtoWriter] = []
        /// Q/DQ nodes to write right after the node producing their source (by source name).
        var nodesAfter: [String: [ProtoWriter]] = [:]
        var rename: [String: String] = [:]
        let graphInputs = Set(file.inputs.map(\.name))
        for k in qdq.indices {
            let a = qdq[k].activation
            let base = a.name
            let sName = names.make(base + "_scale"), zName = names.make(base + "_zero_point")
            let qName = names.make(base + "_quantized"), dqName = names.make(base + "_dequantized")
            qdq[k].dequantized = dqName
            rename[a.name] = dqName
            newInitializers.append(ONNXEncoding.floatTensor(name: sName, dims: [], values: [qdq[k].scale]))
            newInitializers.append(ONNXEncoding.tensor(name: zName, dims: [], type: .uint8, raw: [qdq[k].zeroPoint]))
            let nodes = [
                ONNXEncoding.node("QuantizeLinear", inputs: [a.source, sName, zName], outputs: [qName], name: names.make(base + "_quantize")),
                ONNXEncoding.node("DequantizeLinear", inputs: [qName, sName, zName], outputs: [dqName], name: names.make(base + "_dequantize")),
            ]
            if graphInputs.contains(a.source) { leadingNodes += nodes } else { nodesAfter[a.source, default: []] += nodes }
        }
        let inputScale = Dictionary(qdq.map { ($0.activation.name, $0.scale) }, uniquingKeysWith: { a, _ in a })

        // Weights and biases.
        var summaries: [QuantizedModel.TensorSummary] = []
        var replacedFields = Set<Int>()
        var replacedNames = Set<String>()
        var initializerByName: [String: ONNXModelFile.Initializer] = [:]
        for t in file.initializers { initializerByName[t.name] = t }
        var weightScales: [String: [Float]] = [:]
        var biases = 0
        /// Readers of each bias (node inputs and graph outputs), how many quantized copies it has, and
        /// the copy each op reads as input 2 (by node field) when the bias is shared.
        var biasReaders: [String: Int] = [:]
        for n in file.nodes { for i in n.inputs where !i.isEmpty { biasReaders[i, default: 0] += 1 } }
        var quantizedBiases: [String: Int] = [:]
        var biasRename: [Int: String] = [:]
        for op in plan.ops {
            guard let t = initializerByName[op.weight] else { continue }
            if weightScales[t.name] == nil {
                let w = try file.floats(t)
                let (q, scales) = WeightQuantization.symmetricInt8(w, dims: t.dims, axis: op.axis)
                let inner = t.dims[(op.axis + 1)...].reduce(1, *)
                var maxErr: Float = 0, sq: Double = 0
                for i in w.indices {
                    let e = abs(w[i] - Float(Int8(bitPattern: q[i])) * scales[(i / inner) % scales.count])
                    maxErr = max(maxErr, e)
                    sq += Double(e) * Double(e)
                }
                summaries.append(.init(name: t.name, dims: t.dims, maxAbsError: maxErr, rmsError: Float((sq / Double(max(1, w.count))).squareRoot())))
                let weight = ONNXEncoding.dequantizedInt8Weight(t.name, dims: t.dims, q: q, scales: scales, axis: op.axis, names: &names)
                newInitializers += weight.initializers
                leadingNodes.append(weight.node)
                weightScales[t.name] = scales
                replacedFields.insert(t.fieldIndex)
                replacedNames.insert(t.name)
            }
            let x = file.nodes[op.node].inputs[0]
            guard let biasName = op.bias, let b = initializerByName[biasName], let sx = inputScale[x],
                  let sw = weightScales[t.name] else { continue }
            let values = try file.floats(b)
            guard values.count == sw.count else { continue }
            var raw: [UInt8] = []
            raw.reserveCapacity(values.count * 4)
            var scales: [Float] = []
            for (c, v) in values.enumerated() {
                let s = sx * sw[c]
                scales.append(s)
                let q = s > 0 ? (Double(v) / Double(s)).rounded(.toNearestOrEven) : 0
                let clamped = Int32(max(Double(Int32.min), min(Double(Int32.max), q.isFinite ? q : 0)))
                let bits = UInt32(bitPattern: clamped)
                for i in 0..<4 { raw.append(UInt8(truncatingIfNeeded: bits >> (8 * UInt32(i)))) }
            }
            // The DequantizeLinear output keeps the bias's name when this op is its only reader.
            let only = (biasReaders[b.name] ?? 0) == 1
            let qName = names.make(b.name + "_quantized"), sName = names.make(b.name + "_scale")
            let dqName = only ? b.name : names.make(b.name + "_dequantized")
            newInitializers.append(ONNXEncoding.tensor(name: qName, dims: b.dims, type: .int32, raw: raw))
            newInitializers.append(ONNXEncoding.floatTensor(name: sName, dims: [scales.count], values: scales))
            leadingNodes.append(ONNXEncoding.node("DequantizeLinear", inputs: [qName, sName], outputs: [dqName],
                                                  name: names.make(b.name + "_dequantize"), ints: [("axis", 0)]))
            if only {
                replacedFields.insert(b.fieldIndex)
                replacedNames.insert(b.name)
            } else {
                biasRename[file.nodes[op.node].fieldIndex] = dqName
                quantizedBiases[b.name, default: 0] += 1
                if quantizedBiases[b.name] == biasReaders[b.name] {
                    replacedFields.insert(b.fieldIndex)
                    replacedNames.insert(b.name)
                }
            }
            biases += 1
        }

        // GraphProto: weight and graph-input QDQ nodes first, each activation's pair after its
        // producer, readers of quantized tensors renamed, dropped Relus and replaced initializers
        // (with their graph-input and value_info entries) left out, new initializers last.
        let droppedNodes = Set(plan.activations.compactMap(\.droppedRelu).map { file.nodes[$0].fieldIndex })
        let droppedNames = Set(plan.activations.filter { $0.droppedRelu != nil }.map(\.name))
        let quantizeSources = Dictionary(qdq.map { ($0.activation.source, $0.activation.name) }, uniquingKeysWith: { a, _ in a })
        let nodeByField = Dictionary(uniqueKeysWithValues: file.nodes.map { ($0.fieldIndex, $0) })
        let source = file.scanner.bytes
        let replacedInputFields = Set(file.inputs.filter { replacedNames.contains($0.name) }.map(\.fieldIndex))
        var graph = ProtoWriter()
        var nodesWritten = false
        for (index, f) in file.graphFields.enumerated() {
            if replacedFields.contains(index) || replacedInputFields.contains(index) || droppedNodes.contains(index) { continue }
            if f.number == 13, f.wire == 2, !droppedNames.isEmpty,
               let n = try file.scanner.fields(in: f.payload, "ValueInfoProto").first(where: { $0.number == 1 && $0.wire == 2 }),
               droppedNames.contains(file.scanner.string(n)) {
                continue
            }
            if f.number == 1 && !nodesWritten {
                for n in leadingNodes { graph.message(1, n) }
                nodesWritten = true
            }
            guard f.number == 1, let node = nodeByField[index] else {
                graph.raw(source[f.span])
                continue
            }
            var inputs = node.inputs.map { rename[$0] ?? $0 }
            if let b = biasRename[index], inputs.count > 2 { inputs[2] = b }
            if inputs != node.inputs {
                graph.message(1, try file.node(node, inputs: inputs, outputs: node.outputs))
            } else {
                graph.raw(source[f.span])
            }
            for o in node.outputs where quantizeSources[o] != nil {
                for n in nodesAfter[o] ?? [] { graph.message(1, n) }
            }
        }
        for t in newInitializers { graph.message(5, t) }

        var model = ProtoWriter()
        for (index, f) in file.modelFields.enumerated() {
            if index == file.graphFieldIndex { model.message(7, graph) } else { model.raw(source[f.span]) }
        }
        let summary = Summary(activations: qdq.count, calibrated: plan.calibrated.count,
                              droppedRelus: droppedNames.count, biases: biases, calibrationInputs: inputs.count, method: method)
        let note = "int8-static: \(summaries.count) weight tensors int8 symmetric per output channel, \(biases) biases int32, "
            + "\(qdq.count) activation tensors uint8 per tensor (calibration: \(method), \(inputs.count) inputs)"
        model.message(14, ONNXEncoding.metadataEntry(key: "glimpse.quantization", value: note))
        var kept = 0
        for t in file.initializers where t.dataType == 1 && !replacedNames.contains(t.name) { kept += t.count }
        return (QuantizedModel(mode: .int8Static, bytes: model.bytes, tensors: summaries, keptFloatElements: kept), summary)
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
        let (prepared, skipped) = try QuantizationReport.preprocessImages(folder, spec: preprocessing, model: model)
        return (spread(prepared.map(\.tensor), limit: limit), skipped)
    }

    /// At most `limit` elements taken at even strides (all of them without a limit).
    public static func spread<T>(_ items: [T], limit: Int?) -> [T] {
        guard let limit, limit > 0, items.count > limit else { return items }
        return (0..<limit).map { items[$0 * items.count / limit] }
    }
}
