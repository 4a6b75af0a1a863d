/// Conv → MaxPool, where the pool is the convolution's only reader: the pool moves into the
/// convolution (`ConvOp.pool`), which can then compute its output a band of rows at a time and
/// pool each band while it is in cache, instead of writing the whole output and reading it back
/// (SqueezeNet's first layer writes 3.2 MB that its pool reduces to 0.8 MB).
public enum FuseMaxPool {
    public static func run(_ graph: Graph) {
        graph.fuse { i, node, state in
            guard let pool = node.op as? PoolOp, case .max = pool.kind, pool.window.kernelShape?.count == 2,
                  pool.window.dilations.allSatisfy({ $0 == 1 }),
                  node.outputs.dropFirst().allSatisfy({ state.uses[$0] == 0 && !graph.isGraphOutput($0) }) else { return }
            let x = node.inputs[0]
            guard let p = state.producers[x], !state.removed.contains(p), state.uses[x] == 1, !graph.isGraphOutput(x),
                  let conv = graph.nodes[p].op as? ConvOp, conv.pool == nil, conv.group == 1, conv.outputScale == nil,
                  graph.nodes[p].inputs.count <= 3 else { return }
            conv.pool = pool.window
            graph.nodes[p].outputs = [node.outputs[0]]
            state.removed.insert(i)
        }
    }
}
