/// Conv → Add(other activation of the same shape): the other operand becomes the Conv's residual,
/// added in the GEMM store (ResNet/MobileNet shortcuts).
public enum FuseResidualAdd {
    public static func run(_ graph: Graph) throws {
        var position = [Int: Int]()
        for (i, n) in graph.nodes.enumerated() { for o in n.outputs { position[o] = i } }
        graph.fuse { i, node, state in
            guard let add = node.op as? BinaryOp, add.kind == .add, node.inputs.count == 2 else { return }
            for (x, other) in [(node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])] {
                guard !graph.isConstant(other), let p = state.producers[x], !state.removed.contains(p), state.uses[x] == 1,
                      let conv = graph.nodes[p].op as? ConvOp, conv.activation.isIdentity, conv.outputScale == nil,
                      graph.nodes[p].inputs.count <= 3 else { continue }
                // The residual must be computed before the conv runs.
                if let op = position[other], op > p { continue }
                while graph.nodes[p].inputs.count < 3 { graph.nodes[p].inputs.append(Graph.noValue) }
                graph.nodes[p].inputs.append(other)
                conv.activation = add.activation
                graph.nodes[p].outputs = node.outputs
                state.removed.insert(i)
                break
            }
        }
    }
}
