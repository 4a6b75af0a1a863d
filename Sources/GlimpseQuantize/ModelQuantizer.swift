import Foundation
import GlimpseEngine
import GlimpseONNX

/// What `ModelQuantizer` wrote.
public struct QuantizedModel: Sendable {
    /// One rewritten weight tensor.
    public struct TensorSummary: Sendable, Hashable {
        public var name: String
        public var dims: [Int]
        /// Largest |w − ŵ| over the tensor's elements.
        public var maxAbsError: Float
        /// Root-mean-square of w − ŵ.
        public var rmsError: Float
    }

    public var mode: QuantizationMode
    /// The serialized variant model.
    public var bytes: [UInt8]
    public var tensors: [TensorSummary]
    /// Float initializer elements left as float32 (biases, small tensors, tensors in other roles).
    public var keptFloatElements: Int
    public var quantizedElements: Int { tensors.reduce(0) { $0 + $1.dims.reduce(1, *) } }
}

extension QuantizedModel.TensorSummary {
    /// The summary of a tensor's `original` values against the `restored` ones a variant computes.
    init(name: String, dims: [Int], original: [Float], restored: [Float]) {
        var maxErr: Float = 0, sq: Double = 0
        for i in original.indices {
            let e = abs(original[i] - restored[i])
            maxErr = max(maxErr, e)
            sq += Double(e) * Double(e)
        }
        self.init(name: name, dims: dims, maxAbsError: maxErr, rmsError: Float((sq / Double(max(1, original.count))).squareRoot()))
    }
}

/// Writes fp16 / int8 variants of float32 ONNX models.
///
/// The rewrite is local: each chosen weight initializer `W` is replaced by a smaller initializer
/// plus standard ONNX nodes whose output is named `W`, placed at the start of the graph, so every
/// consumer is untouched and any ONNX runtime can run the file:
/// - `fp16`: `W_fp16` (FLOAT16) → `Cast(to: FLOAT)` → `W`.
/// - `int8Linear`: `W_quantized` (INT8), `W_scale`, `W_zero_point` → `DequantizeLinear(axis)` → `W`
///   (symmetric per output channel: Conv axis 0, Gemm axis 0 or 1 by `transB`, MatMul the last axis).
/// - `int8KMeans`: `W_indices` (UINT8) → `Cast(to: INT32)` → `Gather(W_lut, ·)` → `Mul(W_channel_scale)`
///   → `W`: one table of 2^bits values per tensor, clustered on the weights divided by their output
///   channel's max |w| (without `kmeansChannelScales`: on the raw weights, and no `Mul`).
///
/// Float initializers under `minimumElements` stay float32. The int8 modes only touch weights of
/// Conv, Gemm and MatMul (input 1); `fp16` converts every large float initializer. Glimpse's importer
/// folds these constant subgraphs at load, so the engine runs float32 weights in all three cases.
public enum ModelQuantizer {
    /// Quantizes a model held in memory. `name` is used in error messages.
    public static func quantize(_ bytes: [UInt8], name: String, mode: QuantizationMode,
                                options: QuantizationOptions = .init()) throws -> QuantizedModel {
        let file = try ONNXModelFile(bytes: bytes, name: name)
        try checkOpset(of: file, name: name, mode: mode)
        var names = FreshNames(file)

        var newInitializers: [ProtoWriter] = []
        var newNodes: [ProtoWriter] = []
        var replacedFields = Set<Int>()
        var replacedNames = Set<String>()
        var summaries: [QuantizedModel.TensorSummary] = []
        var kept = 0

        for t in file.initializers {
            guard t.dataType == 1 else { continue }
            guard t.count >= options.minimumElements, !file.outputNames.contains(t.name),
                  let axis = try channelAxis(of: t, in: file, mode: mode) else {
                kept += t.count
                continue
            }
            let w = try file.floats(t)
            let weight = try replacement(of: t, values: w, axis: axis, mode: mode, options: options, names: &names)
            newInitializers += weight.initializers
            newNodes += weight.nodes
            summaries.append(.init(name: t.name, dims: t.dims, original: w, restored: weight.restored))
            replacedFields.insert(t.fieldIndex)
            replacedNames.insert(t.name)
        }

        // GraphProto: new nodes before the first original node, replaced initializers and their
        // graph-input entries (IR < 4 lists initializers as inputs) dropped, new initializers last.
        replacedFields.formUnion(file.inputs.filter { replacedNames.contains($0.name) }.map(\.fieldIndex))
        var graph = ProtoWriter()
        var nodesWritten = false
        for (index, f) in file.graphFields.enumerated() where !replacedFields.contains(index) {
            if f.number == 1 && !nodesWritten {
                for n in newNodes { graph.message(1, n) }
                nodesWritten = true
            }
            graph.raw(file.scanner.bytes[f.span])
        }
        for t in newInitializers { graph.message(5, t) }

        var note = "\(mode.name): \(summaries.count) weight tensors"
        if case .int8KMeans(let bits) = mode {
            note += ", \(bits)-bit k-means, one table per tensor\(options.kmeansChannelScales ? ", per-channel scales" : "")"
        }
        if mode == .int8Linear { note += ", symmetric per output channel" }
        return QuantizedModel(mode: mode, bytes: file.model(graph: graph, quantizationNote: note), tensors: summaries,
                              keptFloatElements: kept)
    }

    /// Throws unless the model's opset has the operators `mode` writes (and for `int8Static`, which
    /// needs calibration: always).
    static func checkOpset(of file: ONNXModelFile, name: String, mode: QuantizationMode) throws {
        switch mode {
        case .fp16, .int8KMeans:
            guard file.opset >= 6 else {
                throw QuantizationError(.unsupportedModel, "\(name): opset \(file.opset) is too old for Cast with an integer 'to' (needs 6 or later)")
            }
        case .int8Static:
            throw QuantizationError(.invalidArgument, "\(name): int8-static needs calibration inputs; use StaticQuantizer")
        case .int8Linear:
            guard file.opset >= 13 else {
                throw QuantizationError(.unsupportedModel, "\(name): per-channel DequantizeLinear needs opset 13 or later; the model has opset \(file.opset)")
            }
        }
    }

    /// What replaces one float weight: new initializers, the nodes that restore the tensor under
    /// its own name, and the restored values (for the error summary).
    struct WeightReplacement {
        var initializers: [ProtoWriter] = []
        var nodes: [ProtoWriter] = []
        var restored: [Float]
    }

    static func replacement(of t: ONNXModelFile.Initializer, values w: [Float], axis: Int, mode: QuantizationMode,
                            options: QuantizationOptions, names: inout FreshNames) throws -> WeightReplacement {
        switch mode {
        case .fp16:
            let bits = WeightQuantization.float16Bits(w)
            var out = WeightReplacement(restored: w.indices.map {
                Float(Float16(bitPattern: UInt16(bits[2 * $0]) | UInt16(bits[2 * $0 + 1]) << 8))
            })
            let stored = names.make(t.name + "_fp16")
            out.initializers.append(ONNXEncoding.tensor(name: stored, dims: t.dims, type: .float16, raw: bits))
            out.nodes.append(ONNXEncoding.node("Cast", inputs: [stored], outputs: [t.name], name: names.make(t.name + "_cast"),
                                               ints: [("to", ONNXEncoding.DataType.float.rawValue)]))
            return out
        case .int8Linear:
            let (q, scales) = WeightQuantization.symmetricInt8(w, dims: t.dims, axis: axis)
            let weight = ONNXEncoding.dequantizedInt8Weight(t.name, dims: t.dims, q: q, scales: scales, axis: axis, names: &names)
            return WeightReplacement(initializers: weight.initializers, nodes: [weight.node],
                                     restored: WeightQuantization.restoredInt8(q, scales: scales, dims: t.dims, axis: axis))
        case .int8Static:
            throw QuantizationError(.invalidArgument, "int8-static needs calibration inputs; use StaticQuantizer")
        case .int8KMeans(let bits):
            return kmeansReplacement(of: t, values: w, axis: axis, bits: bits, options: options, names: &names)
        }
    }

    /// `int8KMeans`: indices into one shared table, per-channel scales when the options ask for them.
    static func kmeansReplacement(of t: ONNXModelFile.Initializer, values w: [Float], axis: Int, bits: Int,
                                  options: QuantizationOptions, names: inout FreshNames) -> WeightReplacement {
        // With channel scales, each output channel is divided by its max |w| first, so one
        // shared table serves channels of very different magnitudes.
        let inner = t.dims[(axis + 1)...].reduce(1, *), channels = t.dims[axis]
        var scales = [Float](repeating: 1, count: channels)
        if options.kmeansChannelScales {
            var maxAbs = [Float](repeating: 0, count: channels)
            for i in w.indices { maxAbs[(i / inner) % channels] = max(maxAbs[(i / inner) % channels], abs(w[i])) }
            scales = maxAbs.map { $0 > 0 ? $0 : 1 }
        }
        let normalized = options.kmeansChannelScales ? w.indices.map { w[$0] / scales[($0 / inner) % channels] } : w
        let (lut, indices) = WeightQuantization.kmeans(normalized, k: 1 << bits, maxIterations: options.kmeansIterations,
                                                       initialization: options.kmeansInitialization)
        var out = WeightReplacement(restored: w.indices.map {
            lut[Int(indices[$0])] * (options.kmeansChannelScales ? scales[($0 / inner) % channels] : 1)
        })
        let iName = names.make(t.name + "_indices"), lName = names.make(t.name + "_lut"), cName = names.make(t.name + "_indices_int32")
        out.initializers.append(ONNXEncoding.tensor(name: iName, dims: t.dims, type: .uint8, raw: indices))
        out.initializers.append(ONNXEncoding.floatTensor(name: lName, dims: [lut.count], values: lut))
        out.nodes.append(ONNXEncoding.node("Cast", inputs: [iName], outputs: [cName], name: names.make(t.name + "_cast"),
                                           ints: [("to", ONNXEncoding.DataType.int32.rawValue)]))
        if options.kmeansChannelScales {
            let gName = names.make(t.name + "_shared"), sName = names.make(t.name + "_channel_scale")
            var scaleDims = [Int](repeating: 1, count: t.dims.count)
            scaleDims[axis] = channels
            out.initializers.append(ONNXEncoding.floatTensor(name: sName, dims: scaleDims, values: scales))
            out.nodes.append(ONNXEncoding.node("Gather", inputs: [lName, cName], outputs: [gName],
                                               name: names.make(t.name + "_lookup"), ints: [("axis", 0)]))
            out.nodes.append(ONNXEncoding.node("Mul", inputs: [gName, sName], outputs: [t.name], name: names.make(t.name + "_scale")))
        } else {
            out.nodes.append(ONNXEncoding.node("Gather", inputs: [lName, cName], outputs: [t.name],
                                               name: names.make(t.name + "_lookup"), ints: [("axis", 0)]))
        }
        return out
    }

    /// Reads `inputPath`, quantizes it, checks that the variant loads in Glimpse's engine (unless
    /// `verify` is false) and writes it to `outputPath`.
    @discardableResult
    public static func quantizeFile(at inputPath: String, to outputPath: String, mode: QuantizationMode,
                                    options: QuantizationOptions = .init(), verify: Bool = true) throws -> QuantizedModel {
        guard let data = FileManager.default.contents(atPath: inputPath) else {
            throw QuantizationError(.io, "cannot read model file \(inputPath)")
        }
        let name = ((inputPath as NSString).lastPathComponent as NSString).deletingPathExtension
        let result = try quantize([UInt8](data), name: name, mode: mode, options: options)
        if verify {
            do {
                _ = try ONNXLoader.load(bytes: result.bytes, name: "\(name) (\(mode.name))")
            } catch {
                throw QuantizationError(.verificationFailed, "the \(mode.name) variant of \(name) does not load in the engine: \(error)")
            }
        }
        do {
            try Data(result.bytes).write(to: URL(fileURLWithPath: outputPath), options: .atomic)
        } catch {
            throw QuantizationError(.io, "cannot write \(outputPath): \(error.localizedDescription)")
        }
        return result
    }

    /// The output-channel axis of a weight, or nil when the tensor is not quantized in this mode.
    /// fp16 takes any large float tensor (axis 0, unused); the int8 modes take tensors read only as
    /// input 1 of Conv, Gemm or MatMul, with one agreed channel axis.
    static func channelAxis(of t: ONNXModelFile.Initializer, in file: ONNXModelFile, mode: QuantizationMode) throws -> Int? {
        if mode == .fp16 { return 0 }
        var axis: Int?
        var used = false
        for n in file.nodes {
            for (slot, input) in n.inputs.enumerated() where input == t.name {
                used = true
                guard slot == 1, n.domain.isEmpty || n.domain == "ai.onnx" else { return nil }
                let a: Int
                switch n.opType {
                case "Conv" where t.dims.count >= 3: a = 0
                case "Gemm" where t.dims.count == 2: a = (n.intAttributes["transB"] ?? 0) != 0 ? 0 : 1
                case "MatMul" where t.dims.count >= 2: a = t.dims.count - 1
                default: return nil
                }
                if let axis, axis != a { return nil }
                axis = a
            }
        }
        return used ? axis : nil
    }
}
