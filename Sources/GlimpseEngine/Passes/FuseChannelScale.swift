/// Mul(x, s) → 1×1 Conv, where s is a per-channel scale of x (squeeze-and-excitation: s comes from
/// a global pooling through 1×1 convolutions and activations): the scale becomes the convolution's
/// fifth input, multiplied into each input channel as the GEMM packs it, which saves a pass over x.
public enum FuseChannelScale {
    public static func run(_ graph: Graph) {
        graph.fuse { i, node, state in
            guard let conv = node.op as? ConvOp, conv.group == 1, conv.outputScale == nil, node.inputs.count <= 4,
                  let w = graph.constant(node.inputs[1]), w.shape.rank == 4, w.shape[2] == 1, w.shape[3] == 1,
                  conv.window.strides.allSatisfy({ $0 == 1 }), conv.window.pads.allSatisfy({ $0 == 0 }),
                  conv.window.autoPad == .notSet || conv.window.autoPad == .valid else { return }
            let y = node.inputs[0]
            guard state.uses[y] == 1, !graph.isGraphOutput(y), let p = state.producers[y], !state.removed.contains(p),
                  let mul = graph.nodes[p].op as? BinaryOp, mul.kind == .mul, mul.activation.isIdentity,
                  graph.nodes[p].inputs.count == 2 else { return }
            let operands = graph.nodes[p].inputs
            for (x, s) in [(operands[0], operands[1]), (operands[1], operands[0])] {
                guard !graph.isConstant(x), !graph.isConstant(s),
                      channelScaleWidth(s, graph: graph, producers: state.producers) == w.shape[1] else { continue }
                var inputs = node.inputs
                inputs[0] = x
                while inputs.count < 4 { inputs.append(Graph.noValue) }
                inputs.append(s)
                graph.nodes[i].inputs = inputs
                state.removed.insert(p)
                break
            }
        }
    }

    /// The channel count of `s` when it is provably [N, C, 1, 1]: a global pooling followed by
    /// element-wise activations and 1×1 unpadded convolutions (the last of which gives C); nil
    /// otherwise.
    static func channelScaleWidth(_ s: Int, graph: Graph, producers: [Int?]) -> Int? {
        var value = s
        var channels: Int?
        for _ in 0..<8 {
            guard let p = producers[value] else { return nil }
            let node = graph.nodes[p]
            switch node.op {
            case is GlobalPoolOp:
                return channels
            case is UnaryOp:
                break
            case let conv as ConvOp:
                guard let w = graph.constant(node.inputs[1]), w.shape.rank == 4, w.shape[2] == 1, w.shape[3] == 1,
                      conv.window.pads.allSatisfy({ $0 == 0 }),
                      conv.window.autoPad == .notSet || conv.window.autoPad == .valid else { return nil }
                channels = channels ?? w.shape[0]
            default:
                return nil
            }
            value = node.inputs[0]
        }
        return nil
    }
}
