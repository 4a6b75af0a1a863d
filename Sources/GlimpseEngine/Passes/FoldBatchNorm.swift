import GlimpseTensor

/// Conv → BatchNormalization: W' = W·s (per output channel), b' = b·s + t, where s and t are the
/// BatchNorm's per-channel affine form. The BatchNorm node disappears.
public enum FoldBatchNorm {
    public static func run(_ graph: Graph) throws {
        graph.fuse { i, node, state in
            guard let bn = node.op as? BatchNormOp else { return }
            let x = node.inputs[0]
            guard let p = state.producers[x], state.uses[x] == 1, let conv = graph.nodes[p].op as? ConvOp,
                  conv.activation.isIdentity, graph.nodes[p].inputs.count <= 3,
                  let w = graph.constant(graph.nodes[p].inputs[1]), w.dtype == .float32,
                  let (scale, shift) = try? bn.affine(node.inputs.map { graph.constant($0) }),
                  scale.count == w.shape[0] else { return }
            let cout = w.shape[0], per = w.count / cout
            let nw = Tensor(shape: w.shape, dtype: .float32)
            for c in 0..<cout { for j in 0..<per { nw.f32[c * per + j] = w.f32[c * per + j] * scale[c] } }
            let oldBias = graph.nodes[p].inputs.count > 2 ? graph.constant(graph.nodes[p].inputs[2])?.floats() : nil
            let nb = Tensor(shape: Shape([cout]), dtype: .float32)
            for c in 0..<cout { nb.f32[c] = (oldBias?[c] ?? 0) * scale[c] + shift[c] }
            let wv = graph.addValue(name: graph.values[graph.nodes[p].inputs[1]].name + "_bn", constant: nw)
            let bv = graph.addValue(name: node.name + "_bn_bias", constant: nb)
            graph.nodes[p].inputs[1] = wv
            if graph.nodes[p].inputs.count > 2 { graph.nodes[p].inputs[2] = bv } else { graph.nodes[p].inputs.append(bv) }
            graph.nodes[p].outputs = [node.outputs[0]]
            state.removed.insert(i)
        }
    }
}
