import GlimpseTensor

/// A dataflow graph of engine operators, in topological order. Values are referred to by index;
/// `Graph.noValue` marks an absent optional input.
public final class Graph {
    public struct Value {
        public var name: String
        /// Known data (initializers, folded constants). Constants are float32 unless they hold
        /// integers (shapes, indices, quantized data).
        public var constant: Tensor?
        /// The type of a constant whose data was dropped after `prepare` because every reader runs
        /// from its own packed copy (`ReleaseConstants`); planning still needs its type.
        public var packedAway: ValueType? = nil
    }

    public struct Node {
        public var op: any Operator
        public var inputs: [Int]
        public var outputs: [Int]
        public var name: String
        public init(op: any Operator, inputs: [Int], outputs: [Int], name: String) {
            self.op = op
            self.inputs = inputs
            self.outputs = outputs
            self.name = name
        }
        public var label: String { "\(op.opType) node '\(name)'" }
    }

    public static let noValue = -1

    public var name: String
    public var values: [Value] = []
    public var nodes: [Node] = []
    /// Graph inputs with their public specs (float16 inputs are converted to float32 on entry).
    public var inputs: [(value: Int, spec: TensorSpec)] = []
    /// Graph outputs with the dtype callers receive (float16 outputs are converted on exit).
    public var outputs: [(value: Int, dtype: DType)] = []
    /// Remarks of the load-time passes for the load log (e.g. quantized nodes left in fp32).
    public var notes: [String] = []

    public init(name: String) { self.name = name }

    @discardableResult
    public func addValue(name: String, constant: Tensor? = nil) -> Int {
        values.append(Value(name: name, constant: constant, packedAway: nil))
        return values.count - 1
    }

    public func isConstant(_ v: Int) -> Bool { v != Graph.noValue && values[v].constant != nil }

    public func constant(_ v: Int) -> Tensor? { v == Graph.noValue ? nil : values[v].constant }

    /// The type of a constant, also of one whose data was packed away (`Value.packedAway`).
    public func constantType(_ v: Int) -> ValueType? {
        guard v != Graph.noValue else { return nil }
        return values[v].constant.map { ValueType($0.shape.dims, $0.dtype) } ?? values[v].packedAway
    }

    /// Number of node inputs and graph outputs reading each value.
    public func useCounts() -> [Int] {
        var counts = [Int](repeating: 0, count: values.count)
        for n in nodes { for i in n.inputs where i != Graph.noValue { counts[i] += 1 } }
        for o in outputs { counts[o.value] += 1 }
        return counts
    }

    /// Index of the node producing each value (nil for inputs and constants).
    public func producers() -> [Int?] {
        var p = [Int?](repeating: nil, count: values.count)
        for (i, n) in nodes.enumerated() { for o in n.outputs { p[o] = i } }
        return p
    }

    /// Replaces every read of `old` by `new`.
    public func replaceUses(of old: Int, with new: Int) {
        for i in nodes.indices {
            for j in nodes[i].inputs.indices where nodes[i].inputs[j] == old { nodes[i].inputs[j] = new }
        }
    }

    public func isGraphOutput(_ v: Int) -> Bool { outputs.contains { $0.value == v } }


    /// A copy whose value, node, input and output lists can be changed without touching this graph.
    /// Operators and constant tensors are shared, not cloned.
    func copy() -> Graph {
        let g = Graph(name: name)
        g.values = values
        g.nodes = nodes
        g.inputs = inputs
        g.outputs = outputs
        g.notes = notes
        return g
    }
}
