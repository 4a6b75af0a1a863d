import GlimpseTensor

/// QLinearConv → ConvOp and QLinearMatMul → GemmOp on centered quantized values: weights become
/// `w − zw` (exact in float), the int32 bias stays as float, and the epilogue multiplies by
/// `sx·sw/sy`, rounds half to even and clamps to the output type's centered range.
public enum LowerQuantizedOps {
    public static func run(_ graph: Graph) throws {
        for i in graph.nodes.indices {
            guard let q = graph.nodes[i].op as? QLinearPlaceholderOp else { continue }
            let node = graph.nodes[i]
            func c(_ j: Int) -> Tensor? { j < node.inputs.count ? graph.constant(node.inputs[j]) : nil }
            do {
                guard node.inputs.count >= 8 else { throw EngineError("expects at least 8 inputs") }
                let px = try QuantParams(scale: c(1), zeroPoint: c(2), what: "input")
                let pw = try QuantParams(scale: c(4), zeroPoint: c(5), what: "weight")
                let py = try QuantParams(scale: c(6), zeroPoint: c(7), what: "output")
                guard let w = c(3) else { throw EngineError("weights must be constant") }
                let wAxis = q.opType == "QLinearConv" ? 0 : 1
                let centered = QuantParams.centered(w, pw, axis: wAxis)
                let channels = q.opType == "QLinearConv" ? w.shape[0] : w.shape[w.shape.rank - 1]
                let scales = (0..<channels).map { ch in (px.scale(0) * pw.scale(ch)) / py.scale(0) }
                let (lo, hi) = py.bounds()
                let wv = graph.addValue(name: graph.values[node.inputs[3]].name + "_centered", constant: centered)
                if q.opType == "QLinearConv" {
                    let conv = ConvOp(window: q.window, group: q.group)
                    conv.outputScale = scales
                    conv.activation = Activation(lower: lo, upper: hi)
                    var inputs = [node.inputs[0], wv]
                    if let b = c(8) {
                        let bf = Tensor(shape: b.shape, floats: b.floats())
                        inputs.append(graph.addValue(name: graph.values[node.inputs[8]].name + "_float", constant: bf))
                    }
                    graph.nodes[i] = Graph.Node(op: conv, inputs: inputs, outputs: node.outputs, name: node.name)
                } else {
                    let gemm = GemmOp(opType: "MatMul")
                    gemm.outputScale = scales
                    gemm.activation = Activation(lower: lo, upper: hi)
                    graph.nodes[i] = Graph.Node(op: gemm, inputs: [node.inputs[0], wv], outputs: node.outputs, name: node.name)
                }
            } catch let e as EngineError {
                throw EngineError("\(graph.name): \(node.label): \(e.description)")
            }
        }
    }
}
