import Foundation
import GlimpseTensor

/// QDQ models (QuantizeLinear / DequantizeLinear around float ops) → integer operators, as
/// onnxruntime's QDQ transformers do at its default optimization level:
///
/// - `DQ(x) → Conv(DQ(w), DQ(b)) → Q` becomes QLinearConv, and `DQ(x) → MatMul(DQ(w)) → Q` becomes
///   QLinearMatMul. `LowerQuantizedOps` then runs them on the centered integers: exact sums,
///   one requantization by `sx·sw/sy`. Run as written, the float convolution rounds its sum of
///   dequantized products, and the quantization after it falls on the other side of a rounding
///   boundary often enough to move probabilities by 0.1 on ShuffleNet-V2.
/// - `DQ → Reshape / Transpose / Split / Flatten / Squeeze / Unsqueeze / MaxPool → Q` with the same
///   scale and zero point on both sides runs the op on the quantized values directly: it moves or
///   picks values without changing them, so the round trip is the identity. The op then reads the
///   quantized value, which `LowerQuantizedToInt8` keeps in uint8 storage for views and 2-D MaxPool
///   (`PoolOp` has a uint8 max kernel) and converts for anything else (a Transpose or Split runs
///   on the fp32 lowering's centered floats).
///
/// Ops whose inputs and output have different scales (Concat here) keep their Q/DQ pair: onnxruntime
/// requantizes them as dequantize-then-quantize too, which is what the pair computes. After the int8
/// lowering, `FuseQuantizedConcat` runs such a Concat (and a MaxPool after it) on uint8 values,
/// requantizing each input by a table that gives the pair's results bit for bit.
///
/// Runs before constant folding, while the weights' DequantizeLinear nodes still show the integers.
public enum FuseQDQ {
    public static func run(_ graph: Graph) {
        fuseIntegerOps(graph)
        DeadNodeElimination.run(graph)
        dropRoundTrips(graph)
        DeadNodeElimination.run(graph)
    }

    /// A DequantizeLinear or QuantizeLinear node with constant scale and zero point.
    struct QDQ {
        let node: Int
        let input: Int
        let scale: Int
        let zeroPoint: Int
        let params: QuantParams
        let axis: Int
    }

    static func qdq(_ graph: Graph, _ producers: [Int?], value: Int, quantize: Bool) -> QDQ? {
        guard value != Graph.noValue, let p = producers[value] else { return nil }
        return qdq(graph, node: p, quantize: quantize)
    }

    static func qdq(_ graph: Graph, node p: Int, quantize: Bool) -> QDQ? {
        let node = graph.nodes[p]
        guard let op = node.op as? QuantizeOp, op.isQuantize == quantize, node.inputs.count >= 2 else { return nil }
        let zp = node.inputs.count > 2 ? node.inputs[2] : Graph.noValue
        guard graph.isConstant(node.inputs[1]), zp == Graph.noValue || graph.isConstant(zp),
              let params = try? QuantParams(scale: graph.constant(node.inputs[1]), zeroPoint: graph.constant(zp), what: "") else {
            return nil
        }
        return QDQ(node: p, input: node.inputs[0], scale: node.inputs[1], zeroPoint: zp, params: params, axis: op.axis)
    }

    /// The only reader of `value`, when it is a per-tensor QuantizeLinear.
    static func soleQuantize(_ graph: Graph, _ readers: [[Int]], value: Int) -> QDQ? {
        guard !graph.isGraphOutput(value), readers[value].count == 1,
              let q = qdq(graph, node: readers[value][0], quantize: true), q.params.isPerTensor,
              q.params.dtype == .uint8 || q.params.dtype == .int8 else { return nil }
        return q
    }

    static func readers(_ graph: Graph) -> [[Int]] {
        var r = [[Int]](repeating: [], count: graph.values.count)
        for (i, n) in graph.nodes.enumerated() { for v in n.inputs where v != Graph.noValue { r[v].append(i) } }
        return r
    }

    /// The activation's DequantizeLinear: per tensor, reading a runtime value (centered integers).
    static func activation(_ graph: Graph, _ producers: [Int?], value: Int) -> QDQ? {
        guard let dq = qdq(graph, producers, value: value, quantize: false), dq.params.isPerTensor,
              !graph.isConstant(dq.input), !graph.inputs.contains(where: { $0.value == dq.input }),
              dq.params.dtype == .uint8 || dq.params.dtype == .int8 else { return nil }
        return dq
    }

    /// The weights' DequantizeLinear: constant 8-bit integers, per tensor or per channel along `axis`.
    static func weights(_ graph: Graph, _ producers: [Int?], value: Int, axis: Int) -> QDQ? {
        guard let dq = qdq(graph, producers, value: value, quantize: false), let w = graph.constant(dq.input),
              w.dtype == .int8 || w.dtype == .uint8 else { return nil }
        if !dq.params.isPerTensor {
            let rank = w.shape.rank
            let a = dq.axis < 0 ? dq.axis + rank : dq.axis
            guard a == axis, rank > axis, w.shape[axis] == dq.params.scales.count else { return nil }
        }
        return dq
    }

    static func fuseIntegerOps(_ graph: Graph) {
        let producers = graph.producers()
        let readers = readers(graph)
        var removed = Set<Int>()
        for i in graph.nodes.indices {
            let node = graph.nodes[i]
            let isConv = node.op is ConvOp
            guard isConv || (node.op as? GemmOp)?.opType == "MatMul", node.inputs.count >= 2, node.outputs.count == 1,
                  let x = activation(graph, producers, value: node.inputs[0]),
                  let w = weights(graph, producers, value: node.inputs[1], axis: isConv ? 0 : 1),
                  let y = soleQuantize(graph, readers, value: node.outputs[0]),
                  let wt = graph.constant(w.input) else { continue }
            if !isConv && wt.shape.rank != 2 { continue }
            var inputs = [x.input, x.scale, x.zeroPoint, w.input, w.scale, w.zeroPoint, y.scale, y.zeroPoint]
            if isConv, node.inputs.count > 2, node.inputs[2] != Graph.noValue {
                let channels = wt.shape[0]
                guard let b = qdq(graph, producers, value: node.inputs[2], quantize: false),
                      let bias = integerBias(graph.constant(b.input), b.params, x: x.params, w: w.params, channels: channels)
                else { continue }
                inputs.append(graph.addValue(name: graph.values[node.inputs[2]].name + "_int", constant: bias))
            }
            let op: QLinearPlaceholderOp
            if let conv = node.op as? ConvOp {
                guard conv.activation == Activation(), conv.outputScale == nil else { continue }
                op = QLinearPlaceholderOp(opType: "QLinearConv", window: conv.window, group: conv.group)
            } else {
                guard let gemm = node.op as? GemmOp, !gemm.transA, !gemm.transB, gemm.alpha == 1, gemm.outputScale == nil
                else { continue }
                op = QLinearPlaceholderOp(opType: "QLinearMatMul")
            }
            // An absent zero point is 0 of type uint8, as QLinearConv's own default.
            graph.nodes[i] = Graph.Node(op: op, inputs: inputs, outputs: graph.nodes[y.node].outputs, name: node.name)
            removed.insert(y.node)
        }
        graph.nodes = graph.nodes.enumerated().filter { !removed.contains($0.offset) }.map { $0.element }
    }

    /// The bias as QLinearConv wants it: integers in units of `sx·sw[c]`. A quantizer writes the bias
    /// with exactly that scale, and then the integers are used as they are (as onnxruntime does); a
    /// bias with another scale is converted, so the sum stays the float model's.
    static func integerBias(_ b: Tensor?, _ pb: QuantParams, x: QuantParams, w: QuantParams, channels: Int) -> Tensor? {
        guard let b, b.count == channels, b.dtype == .int32 || b.dtype == .int8 || b.dtype == .uint8 else { return nil }
        let values = b.floats()
        var out = [Float](repeating: 0, count: channels)
        for c in 0..<channels {
            let q = values[c] - Float(pb.zeroPoint(c))
            let target = x.scale(0) * w.scale(c)
            let given = pb.scale(c)
            out[c] = given == target ? q : Float(Double(q) * Double(given) / Double(target))
        }
        return Tensor(shape: b.shape, floats: out)
    }

    /// Ops that move or select values without changing them.
    static func preservesValues(_ op: any Operator) -> Bool {
        switch op.opType {
        case "Reshape", "Transpose", "Split", "Flatten", "Squeeze", "Unsqueeze", "MaxPool", "Identity": return true
        default: return false
        }
    }

    static func sameParams(_ a: QDQ, _ b: QDQ) -> Bool {
        a.params.isPerTensor && b.params.isPerTensor && a.params.scales == b.params.scales
            && a.params.zeroPoint(0) == b.params.zeroPoint(0) && a.params.dtype == b.params.dtype
    }

    static func dropRoundTrips(_ graph: Graph) {
        let producers = graph.producers()
        let readers = readers(graph)
        var removed = Set<Int>()
        for i in graph.nodes.indices {
            let node = graph.nodes[i]
            guard preservesValues(node.op), let first = node.inputs.first,
                  let dq = activation(graph, producers, value: first) else { continue }
            let quantizers = node.outputs.map { soleQuantize(graph, readers, value: $0) }
            guard quantizers.allSatisfy({ $0.map { sameParams($0, dq) } ?? false }) else { continue }
            var inputs = node.inputs
            inputs[0] = dq.input
            graph.nodes[i].inputs = inputs
            graph.nodes[i].outputs = quantizers.compactMap { $0.map { graph.nodes[$0.node].outputs[0] } }
            for q in quantizers { if let q { removed.insert(q.node) } }
        }
        graph.nodes = graph.nodes.enumerated().filter { !removed.contains($0.offset) }.map { $0.element }
    }
}
