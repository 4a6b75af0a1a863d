/// Which tensors of a float32 model a static int8 variant quantizes, decided on the graph alone
/// (before calibration).
///
/// - **Quantized ops**: Conv, Gemm and MatMul of the default domain whose input 1 is a float
///   initializer with one output-channel axis (`ModelQuantizer.channelAxis`), and whose input 0 is
///   computed at run time.
/// - **Activations**: input 0 of each quantized op, and its output unless that is a graph output, so
///   every quantized op reads `DequantizeLinear` and writes `QuantizeLinear`: the pattern an int8
///   engine fuses into one integer op. A Relu that is the only reader of a quantized op's output is
///   dropped, and its output quantized from the op's output: uint8 with zero point 0 clamps at zero
///   as the Relu did (onnxruntime's quantizer does the same).
/// - With `concatSharesOutput`, the inputs of a Concat that are all Relu'd outputs of quantized ops
///   share the Concat output's scale and zero point (TFLite's rule for concatenation), so an int8
///   engine concatenates bytes; the narrower inputs then get coarser steps. Off by default: on
///   squeezenet1.1 it changed the top-1 of 2 of the 19 shared photos (both close calls) in Glimpse,
///   none in onnxruntime.
/// - A tensor written by an op that only moves or picks values (MaxPool, Reshape, Flatten,
///   Transpose, Squeeze, Unsqueeze, Identity) from a quantized tensor shares that tensor's scale and
///   zero point, so the round trip around the op is the identity and an engine can skip it.
struct StaticQuantizationPlan {
    struct QuantizedOp {
        var node: Int
        var weight: String
        var axis: Int
        /// The float bias initializer quantized to int32 (Conv input 2, Gemm's 1-D input 2), if any.
        /// Its int32 values depend on the op's input scale, so a bias shared by several ops gets one
        /// int32 copy per op.
        var bias: String?
    }

    struct Activation {
        /// The tensor whose readers read the dequantized copy.
        var name: String
        /// What QuantizeLinear reads: `name`, or the input of the Relu dropped in front of it.
        var source: String
        /// Index (in `file.nodes`) of the Relu dropped, if any.
        var droppedRelu: Int?
        /// The tensor whose scale and zero point this one takes, for value-preserving ops.
        var sharesWith: String?
    }

    var ops: [QuantizedOp] = []
    /// Names are unique.
    var activations: [Activation] = []

    /// Tensors whose range calibration has to measure (the others share one of these).
    var calibrated: [String] { activations.filter { $0.sharesWith == nil }.map(\.name) }

    static let valuePreserving: Set<String> = ["MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Identity"]

    /// `concatSharesOutput`: see the type's documentation (off by default).
    init(_ file: ONNXModelFile, concatSharesOutput: Bool = false) throws {
        var floatInitializers: [String: ONNXModelFile.Initializer] = [:]
        for t in file.initializers { floatInitializers[t.name] = t }
        var producer: [String: Int] = [:]
        var readers: [String: [Int]] = [:]
        for (i, n) in file.nodes.enumerated() {
            for o in n.outputs where !o.isEmpty { producer[o] = i }
            for x in Set(n.inputs) where !x.isEmpty { readers[x, default: []].append(i) }
        }
        let isDefaultDomain = Self.isDefaultDomain
        ops = try Self.quantizedOps(file, initializers: floatInitializers)

        var seen = Set<String>()
        func add(_ a: Activation) {
            guard !seen.contains(a.name) else { return }
            seen.insert(a.name)
            activations.append(a)
        }
        for op in ops {
            let n = file.nodes[op.node]
            let y = n.outputs[0]
            guard !file.outputNames.contains(y) else { continue }
            if let r = readers[y], r.count == 1, file.nodes[r[0]].opType == "Relu", isDefaultDomain(file.nodes[r[0]]),
               let relu = file.nodes[r[0]].outputs.first, !file.outputNames.contains(relu) {
                add(Activation(name: relu, source: y, droppedRelu: r[0]))
            } else {
                add(Activation(name: y, source: y))
            }
        }
        /// The quantized tensor that `x` is a value-preserving copy of, through a chain of such ops;
        /// the tensors along the chain are quantized with the same parameters too.
        func shareSource(_ x: String, depth: Int = 0) -> String? {
            guard depth < 64, let p = producer[x], Self.valuePreserving.contains(file.nodes[p].opType), isDefaultDomain(file.nodes[p]),
                  file.nodes[p].outputs.count == 1, let from = file.nodes[p].inputs.first, !from.isEmpty,
                  floatInitializers[from] == nil else { return nil }
            if seen.contains(from) { return from }
            guard !file.outputNames.contains(from), let s = shareSource(from, depth: depth + 1) else { return nil }
            add(Activation(name: from, source: from, sharesWith: s))
            return from
        }
        for op in ops {
            let x = file.nodes[op.node].inputs[0]
            guard !seen.contains(x) else { continue }
            add(Activation(name: x, source: x, sharesWith: shareSource(x)))
        }
        if concatSharesOutput { shareConcatInputs(file, readers: readers) }
        resolveSharing()
    }

    static func isDefaultDomain(_ n: ONNXModelFile.Node) -> Bool { n.domain.isEmpty || n.domain == "ai.onnx" }

    /// Conv, Gemm (without `transA`) and MatMul of the default domain with a float weight on one
    /// channel axis and a computed input, each with its bias when that can be quantized.
    static func quantizedOps(_ file: ONNXModelFile, initializers floatInitializers: [String: ONNXModelFile.Initializer]) throws -> [QuantizedOp] {
        var ops: [QuantizedOp] = []
        for (i, n) in file.nodes.enumerated() where isDefaultDomain(n) && ["Conv", "Gemm", "MatMul"].contains(n.opType) {
            guard n.inputs.count >= 2, n.outputs.count == 1, let w = floatInitializers[n.inputs[1]], w.dataType == 1,
                  floatInitializers[n.inputs[0]] == nil, !n.inputs[0].isEmpty,
                  let axis = try ModelQuantizer.channelAxis(of: w, in: file, mode: .int8Static) else { continue }
            if n.opType == "Gemm", (n.intAttributes["transA"] ?? 0) != 0 { continue }
            var bias: String?
            if n.inputs.count > 2, let b = floatInitializers[n.inputs[2]], b.dataType == 1, b.dims.count == 1,
               b.dims[0] == w.dims[axis], !file.outputNames.contains(b.name) {
                bias = b.name
            }
            ops.append(QuantizedOp(node: i, weight: w.name, axis: axis, bias: bias))
        }
        return ops
    }

    /// Concat of Relu'd quantized outputs: each input takes the output's parameters, so the concat
    /// only copies uint8 values. Zero points stay 0 (every input, so the output, is non-negative),
    /// as the folded Relus need; the inputs get the output's range, which contains theirs.
    mutating func shareConcatInputs(_ file: ONNXModelFile, readers: [String: [Int]]) {
        let index = Dictionary(uniqueKeysWithValues: activations.enumerated().map { ($0.element.name, $0.offset) })
        for n in file.nodes where n.opType == "Concat" && Self.isDefaultDomain(n) {
            guard n.outputs.count == 1, let out = index[n.outputs[0]], activations[out].sharesWith == nil,
                  !n.inputs.isEmpty, Set(n.inputs).count == n.inputs.count else { continue }
            let members = n.inputs.compactMap { index[$0] }
            guard members.count == n.inputs.count, members.allSatisfy({ k in
                activations[k].droppedRelu != nil && activations[k].sharesWith == nil && readers[activations[k].name]?.count == 1
            }) else { continue }
            for k in members { activations[k].sharesWith = n.outputs[0] }
        }
    }

    /// Shared parameters resolve to a calibrated tensor.
    mutating func resolveSharing() {
        let byName = Dictionary(uniqueKeysWithValues: activations.map { ($0.name, $0) })
        for k in activations.indices {
            var target = activations[k].sharesWith
            var hops = 0
            while let t = target, let next = byName[t]?.sharesWith, hops < activations.count {
                target = next
                hops += 1
            }
            activations[k].sharesWith = target
        }
    }
}
