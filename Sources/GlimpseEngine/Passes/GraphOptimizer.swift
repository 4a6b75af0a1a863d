import GlimpseTensor

/// The load-time pass pipeline that turns an imported graph into a compiled one.
public enum GraphOptimizer {
    public static func optimize(_ graph: Graph) throws {
        FuseQDQ.run(graph)
        try ConstantFolding.run(graph)
        LowerQuantizedToInt8.run(graph)
        try LowerQuantizedOps.run(graph)
        try FoldBatchNorm.run(graph)
        try FuseConvBias.run(graph)
        FuseSwish.run(graph)
        try FuseActivation.run(graph)
        try FuseResidualAdd.run(graph)
        try FuseActivation.run(graph)
        FuseSwishIntoConv.run(graph)
        FuseChannelScale.run(graph)
        FuseMaxPool.run(graph)
        DeadNodeElimination.run(graph)
        for node in graph.nodes {
            do {
                try node.op.prepare(constants: node.inputs.map { graph.constant($0) })
            } catch let e as EngineError {
                throw EngineError("\(graph.name): \(node.label): \(e.description)")
            }
        }
    }
}

/// Evaluates nodes whose inputs are all constants, once, at load.
public enum ConstantFolding {
    public static func run(_ graph: Graph) throws {
        var kept: [Graph.Node] = []
        for node in graph.nodes {
            let allConst = node.inputs.allSatisfy { $0 == Graph.noValue || graph.isConstant($0) }
            guard allConst else { kept.append(node); continue }
            let outs: [Tensor]
            do {
                outs = try Evaluator.evaluate(node.op, inputs: node.inputs.map { graph.constant($0) }, label: node.label)
            } catch let e as EngineError {
                throw EngineError("\(graph.name): \(node.label): \(e.description)")
            }
            for (o, t) in zip(node.outputs, outs) { graph.values[o].constant = t }
            // Outputs the op did not produce stay unset (and fail at plan time if read).
        }
        graph.nodes = kept
    }
}

/// Removes nodes none of whose outputs are read.
public enum DeadNodeElimination {
    public static func run(_ graph: Graph) {
        var changed = true
        while changed {
            changed = false
            let uses = graph.useCounts()
            let before = graph.nodes.count
            graph.nodes.removeAll { n in n.outputs.allSatisfy { uses[$0] == 0 } }
            changed = graph.nodes.count != before
        }
    }
}
