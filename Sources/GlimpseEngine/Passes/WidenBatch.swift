import GlimpseTensor

/// Batch widening, the graph half: turns a graph whose inputs all declare a fixed batch of 1 into
/// one whose leading input dimension is the dynamic batch.
///
/// The only rewrite is of Reshapes to a constant shape with a leading 1 (`[1, 256]` in mnist-8),
/// whose input also has a leading 1 at batch 1: the target's leading 1 becomes 0 ("copy the input's
/// dimension"), so the reshape keeps the batch. At batch 1 the rewritten graph has exactly the
/// shapes of the original. Whether it is right at other batch sizes is not decided here:
/// `CompiledModel` plans and runs it at batch 2 and compares with batch-1 runs before adopting it.
enum WidenBatch {
    /// True when every input has rank ≥ 1 and a fixed leading dimension of 1.
    static func isCandidate(_ graph: Graph) -> Bool {
        !graph.inputs.isEmpty && graph.inputs.allSatisfy { $0.spec.shape.first == 1 }
    }

    /// The widened copy of `graph` (which is left untouched). `batchOneTypes` are the value types
    /// of a batch-1 plan of `graph`.
    static func widened(_ graph: Graph, batchOneTypes: [ValueType?]) -> Graph {
        let g = graph.copy()
        for i in g.inputs.indices { g.inputs[i].spec.shape[0] = -1 }
        for i in g.nodes.indices {
            let node = g.nodes[i]
            guard let view = node.op as? ViewOp, case .reshape(let fixed) = view.kind,
                  let data = node.inputs.first, data != Graph.noValue, !g.isConstant(data),
                  data < batchOneTypes.count, batchOneTypes[data]?.shape.first == 1 else { continue }
            if let fixed {
                guard fixed.first == 1 else { continue }
                g.nodes[i].op = ViewOp(opType: view.opType, kind: .reshape(shape: [0] + fixed.dropFirst()))
            } else {
                guard node.inputs.count > 1, let target = g.constant(node.inputs[1]) else { continue }
                let dims = target.int64Values()
                guard target.shape.rank == 1, dims.first == 1 else { continue }
                let shape = g.addValue(name: g.values[node.inputs[1]].name + ".batch",
                                       constant: .int64([0] + dims.dropFirst()))
                g.nodes[i].inputs[1] = shape
            }
        }
        return g
    }
}
