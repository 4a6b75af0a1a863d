/// Conv → Add(other activation of the same shape): the other operand becomes the Conv's residual,
/// added in the GEMM store (ResNet/MobileNet shortcuts).
public enum FuseResidualAdd {
    public static func run(_ graph: Graph) throws {
        let uses = graph.useCounts()
        let producers = graph.producers()
        var removed = Set<Int>()
        var position = [Int: Int]()
        for (i, n) in graph.nodes.enumerated() { for o in n.outputs { position[o] = i } }
        for (i, node) in graph.nodes.enumerated() {
            guard let add = node.op as? BinaryOp, add.kind == .add, node.inputs.count == 2 else { continue }
            for (x, other) in [(node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])] {
                guard !graph.isConstant(other), let p = producers[x], !removed.contains(p), uses[x] == 1,
                      let conv = graph.nodes[p].op as? ConvOp, conv.activation.isIdentity, conv.outputScale == nil,
                      graph.nodes[p].inputs.count <= 3 else { continue }
                // The residual must be computed before the conv runs.
                if let op = position[other], op > p { continue }
                while graph.nodes[p].inputs.count < 3 { graph.nodes[p].inputs.append(Graph.noValue) }
                graph.nodes[p].inputs.append(other)
                conv.activation = add.activation
                graph.nodes[p].outputs = node.outputs
                removed.insert(i)
                break
            }
        }
        graph.removeNodes(at: removed)
    }
}
