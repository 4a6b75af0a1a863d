/// Mul(x, Sigmoid(x)) → Swish(x) (EfficientNet's SiLU), one vectorized pass instead of two.
public enum FuseSwish {
    public static func run(_ graph: Graph) {
        let uses = graph.useCounts()
        let producers = graph.producers()
        var removed = Set<Int>()
        for (i, node) in graph.nodes.enumerated() {
            guard let mul = node.op as? BinaryOp, mul.kind == .mul, node.inputs.count == 2 else { continue }
            for (x, s) in [(node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])] {
                guard let p = producers[s], !removed.contains(p), uses[s] == 1,
                      let sig = graph.nodes[p].op as? UnaryOp, sig.kind == .sigmoid,
                      graph.nodes[p].inputs.first == x else { continue }
                graph.nodes[i] = Graph.Node(op: UnaryOp(opType: "Swish", kind: .swish), inputs: [x], outputs: node.outputs, name: node.name)
                removed.insert(p)
                break
            }
        }
        graph.removeNodes(at: removed)
    }
}
