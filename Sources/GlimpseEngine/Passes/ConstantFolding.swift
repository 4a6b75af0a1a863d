import GlimpseTensor

/// Evaluates nodes whose inputs are all constants, once, at load.
public enum ConstantFolding {
    public static func run(_ graph: Graph) throws {
        var kept: [Graph.Node] = []
        for node in graph.nodes {
            let allConst = node.inputs.allSatisfy { $0 == Graph.noValue || graph.isConstant($0) }
            guard allConst else { kept.append(node); continue }
            let outs: [Tensor]
            do {
                outs = try OperatorEvaluator.evaluate(node.op, inputs: node.inputs.map { graph.constant($0) }, label: node.label)
            } catch let e as EngineError {
                throw EngineError("\(graph.name): \(node.label): \(e.description)")
            }
            for (o, t) in zip(node.outputs, outs) { graph.values[o].constant = t }
            // Outputs the op did not produce stay unset (and fail at plan time if read).
        }
        graph.nodes = kept
    }
}
