/// Conv → Swish: the swish moves into the convolution's store (EfficientNet), saving a pass over
/// the activation.
public enum FuseSwishIntoConv {
    public static func run(_ graph: Graph) {
        graph.fuse { i, node, state in
            guard let act = node.op as? UnaryOp, act.kind == .swish, node.inputs.count == 1 else { return }
            let x = node.inputs[0]
            guard let p = state.producers[x], !state.removed.contains(p), state.uses[x] == 1, !graph.isGraphOutput(x),
                  let conv = graph.nodes[p].op as? ConvOp, !conv.activation.swish, conv.outputScale == nil else { return }
            conv.activation.swish = true
            graph.nodes[p].outputs = node.outputs
            state.removed.insert(i)
        }
    }
}
