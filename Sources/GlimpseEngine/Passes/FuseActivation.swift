/// Conv/Gemm/Add followed by Relu or a constant Clip: the bounds move into the producer's epilogue.
public enum FuseActivation {
    public static func run(_ graph: Graph) throws {
        graph.fuse { i, node, state in
            guard let act = node.op as? UnaryOp else { return }
            let kind: (Float, Float)
            do {
                guard let b = try? act.resolvedKind(node.inputs.map { graph.constant($0) }) else { return }
                switch b {
                case .relu: kind = (0, .infinity)
                case .clip(let lo, let hi): kind = (lo, hi)
                default: return
                }
            }
            if node.inputs.dropFirst().contains(where: { $0 != Graph.noValue && !graph.isConstant($0) }) { return }
            let x = node.inputs[0]
            guard let p = state.producers[x], !state.removed.contains(p), state.uses[x] == 1, !graph.isGraphOutput(x) else { return }
            let target = graph.nodes[p].op
            let current: Activation
            if let c = target as? ConvOp { current = c.activation }
            else if let g = target as? GemmOp { current = g.activation }
            else if let b = target as? BinaryOp, b.kind == .add { current = b.activation }
            else { return }
            if current.swish { return }  // the clamp would have to follow the swish
            let fused = Activation(lower: max(current.lower, kind.0), upper: min(current.upper, kind.1))
            if let c = target as? ConvOp { c.activation = fused }
            else if let g = target as? GemmOp { g.activation = fused }
            else if let b = target as? BinaryOp { b.activation = fused }
            graph.nodes[p].outputs = node.outputs
            state.removed.insert(i)
        }
    }
}
