/// `DQ(a), DQ(b), … → Concat → [MaxPool / views] → Q` on uint8 values (SqueezeNet's fire modules
/// in a QDQ model) → each input requantized uint8 → uint8 to the Q's scale and zero point by a
/// 256-entry table (`U8RequantizeTableOp`; none where the parameters already match), then Concat
/// and MaxPool on the uint8 values; the DequantizeLinear, float Concat, float MaxPool and
/// QuantizeLinear are gone.
///
/// Bit-exact with the float path: the table is built by the dequantize and quantize kernels
/// themselves, so `table[q] = Q(DQ(q))` for every q; Concat and views only move values; and for
/// positive scales Q and DQ are monotonic non-decreasing, so `Q(max(DQ(x), DQ(y))) =
/// max(Q(DQ(x)), Q(DQ(y)))`: MaxPool over the requantized values gives what quantizing the float
/// maximum gives (padded cells are ignored either way). A scale that is not positive (or not finite)
/// leaves the pattern alone.
///
/// Runs right after `LowerQuantizedToInt8`, whose uint8 values (with their zero points) it is given.
public enum FuseQuantizedConcat {
    public static func run(_ graph: Graph, uint8 zeroPoints: [Int: Int32]) {
        guard !zeroPoints.isEmpty else { return }
        let producers = graph.producers()
        let readers = FuseQDQ.readers(graph)
        var removed = Set<Int>()
        var added: [(before: Int, node: Graph.Node)] = []
        for i in graph.nodes.indices {
            guard graph.nodes[i].op is ConcatOp, graph.nodes[i].outputs.count == 1,
                  let chain = chain(graph, readers, concat: i),
                  let (toScale, toZero) = quantizer(graph.nodes[chain.quantize].op) else { continue }
            var sources: [(value: Int, scale: Float, zeroPoint: Int32)] = []
            for v in graph.nodes[i].inputs {
                guard let dq = uint8Dequantize(graph, producers, value: v, zeroPoints) else { break }
                sources.append(dq)
            }
            guard sources.count == graph.nodes[i].inputs.count, !sources.isEmpty else { continue }
            var inputs: [Int] = []
            for s in sources {
                if s.scale == toScale && s.zeroPoint == toZero {
                    inputs.append(s.value)
                    continue
                }
                let out = graph.addValue(name: graph.values[s.value].name + "_requantized")
                let op = U8RequantizeTableOp(fromScale: s.scale, fromZeroPoint: s.zeroPoint, toScale: toScale, toZeroPoint: toZero)
                added.append((i, Graph.Node(op: op, inputs: [s.value], outputs: [out], name: graph.nodes[i].name + "_requantize")))
                inputs.append(out)
            }
            graph.nodes[i].inputs = inputs
            // The chain's last node writes the QuantizeLinear's output instead.
            graph.nodes[chain.last].outputs = graph.nodes[chain.quantize].outputs
            removed.insert(chain.quantize)
        }
        guard !removed.isEmpty else { return }
        var nodes: [Graph.Node] = []
        var next = 0
        for (i, node) in graph.nodes.enumerated() {
            while next < added.count && added[next].before == i {
                nodes.append(added[next].node)
                next += 1
            }
            if !removed.contains(i) { nodes.append(node) }
        }
        graph.nodes = nodes
        DeadNodeElimination.run(graph)
    }

    /// From the Concat's output through single-reader MaxPools and views to a sole QuantizeLinear
    /// reader: the last node before the QuantizeLinear (the Concat itself when there is none
    /// between), and the QuantizeLinear.
    static func chain(_ graph: Graph, _ readers: [[Int]], concat: Int) -> (last: Int, quantize: Int)? {
        var v = graph.nodes[concat].outputs[0]
        var last = concat
        for _ in 0..<graph.nodes.count {
            guard !graph.isGraphOutput(v), readers[v].count == 1 else { return nil }
            let r = readers[v][0]
            let node = graph.nodes[r]
            if quantizer(node.op) != nil { return node.inputs.first == v ? (last, r) : nil }
            guard node.inputs.first == v, node.outputs.count == 1,
                  node.op.isView || LowerQuantizedToInt8.isMaxPool2D(node.op) else { return nil }
            last = r
            v = node.outputs[0]
        }
        return nil
    }

    /// The uint8 QuantizeLinear's scale and zero point, when the scale is positive.
    static func quantizer(_ op: any Operator) -> (Float, Int32)? {
        guard let q = op as? QuantizeU8Op, q.scale.isFinite, q.scale > 0 else { return nil }
        return (q.scale, q.zeroPoint)
    }

    /// `value` as the output of a per-tensor uint8 DequantizeLinear (positive scale) of a uint8
    /// runtime value: that value and its parameters.
    static func uint8Dequantize(_ graph: Graph, _ producers: [Int?], value: Int, _ zeroPoints: [Int: Int32])
        -> (value: Int, scale: Float, zeroPoint: Int32)? {
        guard let dq = FuseQDQ.qdq(graph, producers, value: value, quantize: false), dq.params.isPerTensor,
              dq.params.dtype == .uint8, let zp = zeroPoints[dq.input], Int32(dq.params.zeroPoint(0)) == zp,
              !graph.isConstant(dq.input) else { return nil }
        let scale = dq.params.scale(0)
        guard scale.isFinite, scale > 0 else { return nil }
        return (dq.input, scale, zp)
    }
}
