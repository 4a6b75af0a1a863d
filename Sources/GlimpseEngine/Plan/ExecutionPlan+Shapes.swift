import GlimpseTensor

/// Step 1 of planning: the type of every value for one batch size, with the values that depend only
/// on constants and shapes folded, and the nodes left to run.
struct PlanShapes {
    var types: [ValueType?]
    /// Constants and folded values.
    var known: [Tensor?]
    /// Nodes that run, in graph order.
    var live: [Int]
}

extension ExecutionPlan {
    static func inferShapes(_ graph: Graph, batch: Int) throws -> PlanShapes {
        let count = graph.values.count
        var types = [ValueType?](repeating: nil, count: count)
        var known = [Tensor?](repeating: nil, count: count)
        for (i, v) in graph.values.enumerated() {
            if let t = v.packedAway { types[i] = t }
            guard let constant = v.constant else { continue }
            known[i] = constant
            types[i] = ValueType(constant.shape.dims, constant.dtype)
        }
        for input in graph.inputs {
            let shape = input.spec.shape.map { $0 < 0 ? batch : $0 }
            types[input.value] = ValueType(shape, .float32)
        }
        var live: [Int] = []
        for (index, node) in graph.nodes.enumerated() {
            let inTypes: [ValueType] = try node.inputs.map { v in
                if v == Graph.noValue { return .absent }
                guard let t = types[v] else {
                    throw EngineError("\(graph.name): \(node.label) reads '\(graph.values[v].name)', which no node produces")
                }
                return t
            }
            let consts = node.inputs.map { $0 == Graph.noValue ? nil : known[$0] }
            do {
                let allConst = zip(node.inputs, consts).allSatisfy { $0.0 == Graph.noValue || $0.1 != nil }
                let fromTypes = allConst ? nil : node.op.foldFromTypes(inTypes)
                if allConst || fromTypes != nil {
                    let outs = try fromTypes ?? OperatorEvaluator.evaluate(node.op, inputs: consts, label: node.label)
                    for (o, t) in zip(node.outputs, outs) {
                        known[o] = t
                        types[o] = ValueType(t.shape.dims, t.dtype)
                    }
                    continue
                }
                let outTypes = try node.op.inferTypes(inTypes, constants: consts)
                // Optional outputs an operator does not produce (Dropout's mask) stay undefined;
                // reading one fails later with the value's name.
                for (o, t) in zip(node.outputs, outTypes) { types[o] = t }
                live.append(index)
            } catch let e as EngineError {
                throw EngineError("\(graph.name): \(node.label): \(e.description) (inputs \(inTypes))")
            }
        }
        return PlanShapes(types: types, known: known, live: neededNodes(graph, live: live, known: known))
    }

    /// The nodes of `live` whose outputs something reads: a graph output, or an input of another
    /// such node. Folding can leave a node whose only reader was folded (a DequantizeLinear read
    /// only by a Shape, whose value the batch size fixes); it is not run.
    static func neededNodes(_ graph: Graph, live: [Int], known: [Tensor?]) -> [Int] {
        var needed = [Bool](repeating: false, count: graph.values.count)
        for out in graph.outputs { needed[out.value] = true }
        var kept: [Int] = []
        kept.reserveCapacity(live.count)
        for index in live.reversed() {
            let node = graph.nodes[index]
            guard node.outputs.contains(where: { needed[$0] }) else { continue }
            kept.append(index)
            for v in node.inputs where v != Graph.noValue && known[v] == nil { needed[v] = true }
        }
        return kept.reversed()
    }
}
