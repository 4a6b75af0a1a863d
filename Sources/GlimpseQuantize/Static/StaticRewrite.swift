/// An activation's QuantizeLinear → DequantizeLinear pair: the tensor, and the scale and zero point
/// of its (possibly shared) calibrated range.
struct ActivationQDQ {
    var activation: StaticQuantizationPlan.Activation
    var scale: Float
    var zeroPoint: UInt8
}

/// What `StaticQuantizer` writes into a model, built one tensor at a time: new initializers and
/// nodes, what they replace, and the graph that results.
struct StaticRewrite {
    let file: ONNXModelFile
    var names: FreshNames
    var newInitializers: [ProtoWriter] = []
    /// Weight, bias and graph-input Q/DQ nodes, written before the first original node.
    var leadingNodes: [ProtoWriter] = []
    /// Q/DQ nodes to write right after the node producing their source (by source name).
    var nodesAfter: [String: [ProtoWriter]] = [:]
    /// Readers of a quantized activation read its dequantized copy.
    var rename: [String: String] = [:]
    var replacedFields = Set<Int>()
    var replacedNames = Set<String>()
    var summaries: [QuantizedModel.TensorSummary] = []
    var weightScales: [String: [Float]] = [:]
    var biases = 0
    /// Readers of each bias (node inputs and graph outputs), how many quantized copies it has, and
    /// the copy each op reads as input 2 (by node field) when the bias is shared.
    var biasReaders: [String: Int] = [:]
    var quantizedBiases: [String: Int] = [:]
    var biasRename: [Int: String] = [:]

    init(_ file: ONNXModelFile) {
        self.file = file
        names = FreshNames(file)
        for n in file.nodes { for i in n.inputs where !i.isEmpty { biasReaders[i, default: 0] += 1 } }
    }

    /// Each activation's scale and zero point, from its own calibrated range or the one it shares.
    static func activationQDQ(_ plan: StaticQuantizationPlan, ranges: [String: ActivationRange],
                              name: String) throws -> [ActivationQDQ] {
        var params: [String: (scale: Float, zeroPoint: UInt8)] = [:]
        for a in plan.activations where a.sharesWith == nil {
            guard let r = ranges[a.name] else {
                throw QuantizationError(.verificationFailed, "\(name): no calibration range for '\(a.name)'")
            }
            params[a.name] = StaticQuantizer.uint8Parameters(lower: r.lower, upper: r.upper)
        }
        return try plan.activations.map { a in
            guard let p = params[a.sharesWith ?? a.name] else {
                throw QuantizationError(.verificationFailed, "\(name): no quantization parameters for '\(a.name)'")
            }
            return ActivationQDQ(activation: a, scale: p.scale, zeroPoint: p.zeroPoint)
        }
    }

    /// The Q/DQ pair of every activation: after the source's producer, or first for a graph input.
    mutating func addActivationPairs(_ qdq: [ActivationQDQ]) {
        let graphInputs = Set(file.inputs.map(\.name))
        for p in qdq {
            let a = p.activation
            let base = a.name
            let sName = names.make(base + "_scale"), zName = names.make(base + "_zero_point")
            let qName = names.make(base + "_quantized"), dqName = names.make(base + "_dequantized")
            rename[a.name] = dqName
            newInitializers.append(ONNXEncoding.floatTensor(name: sName, dims: [], values: [p.scale]))
            newInitializers.append(ONNXEncoding.tensor(name: zName, dims: [], type: .uint8, raw: [p.zeroPoint]))
            let nodes = [
                ONNXEncoding.node("QuantizeLinear", inputs: [a.source, sName, zName], outputs: [qName], name: names.make(base + "_quantize")),
                ONNXEncoding.node("DequantizeLinear", inputs: [qName, sName, zName], outputs: [dqName], name: names.make(base + "_dequantize")),
            ]
            if graphInputs.contains(a.source) { leadingNodes += nodes } else { nodesAfter[a.source, default: []] += nodes }
        }
    }

    /// The weight as int8, symmetric per channel along `axis`, behind a DequantizeLinear that keeps
    /// its name.
    mutating func quantizeWeight(_ t: ONNXModelFile.Initializer, axis: Int) throws {
        let w = try file.floats(t)
        let (q, scales) = WeightQuantization.symmetricInt8(w, dims: t.dims, axis: axis)
        summaries.append(.init(name: t.name, dims: t.dims, original: w,
                               restored: WeightQuantization.restoredInt8(q, scales: scales, dims: t.dims, axis: axis)))
        let weight = ONNXEncoding.dequantizedInt8Weight(t.name, dims: t.dims, q: q, scales: scales, axis: axis, names: &names)
        newInitializers += weight.initializers
        leadingNodes.append(weight.node)
        weightScales[t.name] = scales
        replacedFields.insert(t.fieldIndex)
        replacedNames.insert(t.name)
    }

    /// Bias `b` of node `node` as int32 in units of `inputScale · weightScales[c]`, behind a
    /// DequantizeLinear; left float when its length is not the weight's channel count.
    mutating func quantizeBias(_ b: ONNXModelFile.Initializer, node: Int, inputScale sx: Float, weightScales sw: [Float]) throws {
        let values = try file.floats(b)
        guard values.count == sw.count else { return }
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
            biasRename[file.nodes[node].fieldIndex] = dqName
            quantizedBiases[b.name, default: 0] += 1
            if quantizedBiases[b.name] == biasReaders[b.name] {
                replacedFields.insert(b.fieldIndex)
                replacedNames.insert(b.name)
            }
        }
        biases += 1
    }

    /// The GraphProto: weight and graph-input Q/DQ nodes first, each activation's pair after its
    /// producer, readers of quantized tensors renamed, dropped Relus (`droppedNodes`, by field) and
    /// replaced initializers (with their graph-input and value_info entries) left out, new
    /// initializers last.
    func graph(droppedNodes: Set<Int>, droppedNames: Set<String>) throws -> ProtoWriter {
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
            for o in node.outputs {
                for n in nodesAfter[o] ?? [] { graph.message(1, n) }
            }
        }
        for t in newInitializers { graph.message(5, t) }
        return graph
    }
}
