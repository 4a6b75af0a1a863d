/// After `prepare`: drops constant data no operator reads again, so a loaded model holds its packed
/// weights once, not the imported ones beside them. A constant no node reads any more (one that
/// folding, fusion or lowering replaced) is dropped outright; one whose every reader runs from its
/// own packed copy (`Operator.packedAway(input:)`) keeps only its type, which planning reads.
enum ReleaseConstants {
    static func run(_ graph: Graph) {
        var read = [Bool](repeating: false, count: graph.values.count)
        var readAtRun = read
        for node in graph.nodes {
            for (i, v) in node.inputs.enumerated() where v != Graph.noValue {
                read[v] = true
                if !node.op.packedAway(input: i) { readAtRun[v] = true }
            }
        }
        for output in graph.outputs { readAtRun[output.value] = true }
        for v in graph.values.indices where !readAtRun[v] {
            guard let constant = graph.values[v].constant else { continue }
            if read[v] { graph.values[v].packedAway = ValueType(constant.shape.dims, constant.dtype) }
            graph.values[v].constant = nil
        }
    }
}
