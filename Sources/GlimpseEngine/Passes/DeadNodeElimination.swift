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
