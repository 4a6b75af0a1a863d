import GlimpseTensor

/// The load-time pass pipeline that turns an imported graph into a compiled one.
public enum GraphOptimizer {
    /// `rewrite`, then `prepare`.
    public static func optimize(_ graph: Graph) throws {
        try rewrite(graph)
        try prepare(graph)
    }

    /// The passes: folding, lowering and fusion.
    public static func rewrite(_ graph: Graph) throws {
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
    }

    /// Each operator packs the constants it reads (`Operator.prepare`).
    public static func prepare(_ graph: Graph) throws {
        // Convolutions that pack the same weights alike share one packed copy.
        var convolutions: [(op: ConvOp, constants: [Tensor?])] = []
        for node in graph.nodes {
            let constants = node.inputs.map { graph.constant($0) }
            do {
                if let conv = node.op as? ConvOp {
                    if let twin = convolutions.first(where: { conv.packsLike($0.op, constants: constants, otherConstants: $0.constants) }) {
                        conv.sharePrepared(from: twin.op)
                        continue
                    }
                    try conv.prepare(constants: constants)
                    convolutions.append((conv, constants))
                    continue
                }
                try node.op.prepare(constants: constants)
            } catch let e as EngineError {
                throw EngineError("\(graph.name): \(node.label): \(e.description)")
            }
        }
        ReleaseConstants.run(graph)
    }
}
