import GlimpseTensor

/// Evaluates nodes whose inputs are all constants, once, at load.
public enum ConstantFolding {
    /// What folding may produce in all, so a small file (`ConstantOfShape` nodes) cannot make the loader
    /// allocate without bound; the largest model of the shared data folds 548 MiB in all (light_vgg19).
    /// The kernels' packed copies come on top (see `EngineOptions.weightBudgetBytes`).
    public static let maxFoldedBytes = 1 << 30
    /// The largest tensor one node may compute at load (`ConstantOfShape`); the largest of the shared
    /// data is 392 MiB (light_vgg19's first fully connected weights).
    public static let maxTensorBytes = 512 << 20

    public static func run(_ graph: Graph) throws {
        var kept: [Graph.Node] = []
        var folded = 0
        for node in graph.nodes {
            let allConst = node.inputs.allSatisfy { $0 == Graph.noValue || graph.isConstant($0) }
            guard allConst else { kept.append(node); continue }
            let outs: [Tensor]
            do {
                outs = try OperatorEvaluator.evaluate(node.op, inputs: node.inputs.map { graph.constant($0) }, label: node.label)
            } catch let e as EngineError {
                throw EngineError("\(graph.name): \(node.label): \(e.description)")
            }
            folded += outs.reduce(0) { $0 + $1.shape.count * $1.dtype.byteSize }
            guard folded <= maxFoldedBytes else {
                throw EngineError("\(graph.name): \(node.label): constants computed at load exceed \(maxFoldedBytes >> 20) MiB")
            }
            for (o, t) in zip(node.outputs, outs) { graph.values[o].constant = t }
            // Outputs the op did not produce stay unset (and fail at plan time if read).
        }
        graph.nodes = kept
    }
}
