/// Conv → Swish: the swish moves into the convolution's store (EfficientNet), saving a pass over
/// the activation.
public enum FuseSwishIntoConv {
    public static func run(_ graph: Graph) {
        let uses = graph.useCounts()
        let producers = graph.producers()
        var removed = Set<Int>()
        for (i, node) in graph.nodes.enumerated() {
            guard let act = node.op as? UnaryOp, act.kind == .swish, node.inputs.count == 1 else { continue }
            let x = node.inputs[0]
            guard let p = producers[x], !removed.contains(p), uses[x] == 1, !graph.isGraphOutput(x),
                  let conv = graph.nodes[p].op as? ConvOp, !conv.activation.swish, conv.outputScale == nil else { continue }
            conv.activation.swish = true
            graph.nodes[p].outputs = node.outputs
            removed.insert(i)
        }
        graph.removeNodes(at: removed)
    }
}
