/// Mul(x, Sigmoid(x)) → Swish(x) (EfficientNet's SiLU), one vectorized pass instead of two.
public enum FuseSwish {
    public static func run(_ graph: Graph) {
        graph.fuse { i, node, state in
            guard let mul = node.op as? BinaryOp, mul.kind == .mul, node.inputs.count == 2 else { return }
            for (x, s) in [(node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])] {
                guard let p = state.producers[s], !state.removed.contains(p), state.uses[s] == 1,
                      let sig = graph.nodes[p].op as? UnaryOp, sig.kind == .sigmoid,
                      graph.nodes[p].inputs.first == x else { continue }
                graph.nodes[i] = Graph.Node(op: UnaryOp(opType: "Swish", kind: .swish), inputs: [x], outputs: node.outputs, name: node.name)
                state.removed.insert(p)
                break
            }
        }
    }
}
