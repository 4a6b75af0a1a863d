/// The load-time pass pipeline that turns an imported graph into a compiled one.
public enum GraphOptimizer {
    public static func optimize(_ graph: Graph) throws {
        FuseQDQ.run(graph)
        try ConstantFolding.run(graph)
        let uint8 = LowerQuantizedToInt8.run(graph)
        FuseQuantizedConcat.run(graph, uint8: uint8)
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
