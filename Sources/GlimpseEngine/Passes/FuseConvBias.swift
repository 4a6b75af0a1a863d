import GlimpseTensor

/// Conv → Add(constant per-channel bias) becomes the Conv's bias.
public enum FuseConvBias {
    public static func run(_ graph: Graph) throws {
        graph.fuse { i, node, state in
            guard let add = node.op as? BinaryOp, add.kind == .add, add.activation.isIdentity else { return }
            for (x, c) in [(node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])] {
                guard let p = state.producers[x], !state.removed.contains(p), state.uses[x] == 1,
                      let conv = graph.nodes[p].op as? ConvOp, conv.activation.isIdentity,
                      graph.nodes[p].inputs.count <= 3, let bias = graph.constant(c),
                      let w = graph.constant(graph.nodes[p].inputs[1]), bias.dtype == .float32 else { continue }
                let cout = w.shape[0]
                let dims = bias.shape.dims
                // Accept [C], [C,1,1], [1,C,1,1].
                let nonOne = dims.enumerated().filter { $0.element != 1 }
                guard bias.count == cout, nonOne.count <= 1, dims.count <= 4,
                      cout == 1 || dims.count == 1 || (dims.count >= 3 && nonOne.first?.offset == dims.count - 3) else { continue }
                let old = graph.nodes[p].inputs.count > 2 ? graph.constant(graph.nodes[p].inputs[2]) : nil
                let merged = Tensor(shape: Shape([cout]), dtype: .float32)
                for k in 0..<cout { merged.f32[k] = bias.f32[k] + (old?.f32[k] ?? 0) }
                let b = graph.addValue(name: graph.values[c].name + "_fused_bias", constant: merged)
                state.uses.append(1)
                if graph.nodes[p].inputs.count > 2 { graph.nodes[p].inputs[2] = b } else { graph.nodes[p].inputs.append(b) }
                graph.nodes[p].outputs = node.outputs
                state.removed.insert(i)
                break
            }
        }
    }
}
