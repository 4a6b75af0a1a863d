/// What a fusion pass reads of a graph as it walks it: how often each value is read and which node
/// produces it (as they were when the pass began), and the nodes it has folded into others so far.
public struct FusionState {
    public var uses: [Int]
    public let producers: [Int?]
    public var removed = Set<Int>()
}

extension Graph {
    /// Runs one fusion pass: `visit` sees each node (as it was when the pass began) with its
    /// position, rewrites the graph where it fuses, and adds the positions of the nodes it folded
    /// into others to `state.removed`; those nodes are dropped at the end, the rest keep their order.
    public func fuse(_ visit: (_ index: Int, _ node: Node, _ state: inout FusionState) throws -> Void) rethrows {
        var state = FusionState(uses: useCounts(), producers: producers())
        for (i, node) in nodes.enumerated() {
            try visit(i, node, &state)
        }
        removeNodes(at: state.removed)
    }

    /// Drops the nodes at `indices` (positions in `nodes`), keeping the order of the rest.
    public func removeNodes(at indices: Set<Int>) {
        guard !indices.isEmpty else { return }
        nodes = nodes.enumerated().filter { !indices.contains($0.offset) }.map { $0.element }
    }
}
