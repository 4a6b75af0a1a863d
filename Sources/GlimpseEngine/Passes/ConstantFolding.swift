import GlimpseTensor

/// Evaluates nodes whose inputs are all constants, once, at load.
public enum ConstantFolding {
    /// What folding may produce in all, so a small file (`ConstantOfShape` nodes) cannot make the loader
    /// allocate without bound; the largest model of the shared data folds about 0.6 GiB.
    public static let maxFoldedBytes = 2 << 30

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
                throw EngineError("\(graph.name): \(node.label): constants computed at load exceed \(maxFoldedBytes >> 30) GiB")
            }
            for (o, t) in zip(node.outputs, outs) { graph.values[o].constant = t }
            // Outputs the op did not produce stay unset (and fail at plan time if read).
        }
        graph.nodes = kept
    }
}
