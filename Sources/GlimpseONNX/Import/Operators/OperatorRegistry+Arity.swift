extension OperatorRegistry {
    /// How many inputs each registered operator takes (ONNX's operator specifications, narrowed to what
    /// the builders support); the first `lowerBound` are required, so none of them may be empty. The
    /// importer checks a node against it before the node reaches an operator, whose code then indexes
    /// its inputs freely.
    static let inputCounts: [String: ClosedRange<Int>] = {
        var r: [String: ClosedRange<Int>] = [:]
        for op in ["Abs", "Exp", "Neg", "Reciprocal", "Relu", "Sigmoid", "Sqrt", "Tanh", "HardSigmoid", "HardSwish",
                   "LeakyRelu", "Identity", "Softmax", "LogSoftmax", "Flatten", "Shape", "Cast", "GlobalAveragePool",
                   "GlobalMaxPool", "LRN", "Transpose", "MaxPool", "AveragePool", "ConstantOfShape"] {
            r[op] = 1...1
        }
        for op in ["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Sum", "MatMul", "Gather", "Reshape"] { r[op] = 2...2 }
        r["Reshape@<5"] = 1...1  // the shape is an attribute before opset 5
        for op in ["ReduceMean", "ReduceSum", "ReduceMax", "Squeeze", "Unsqueeze", "Split"] { r[op] = 1...2 }
        r["Clip"] = 1...3
        r["Dropout"] = 1...3
        r["Concat"] = 1...Int.max
        r["Conv"] = 2...3
        r["Gemm"] = 2...3
        r["BatchNormalization"] = 5...5
        r["QuantizeLinear"] = 2...3
        r["DequantizeLinear"] = 2...3
        r["QLinearConv"] = 8...9
        r["QLinearMatMul"] = 8...8
        r["com.microsoft:QLinearAdd"] = 7...8
        r["com.microsoft:QLinearGlobalAveragePool"] = 5...5
        return r
    }()

    /// Throws when `node` (registered as `key`) has a number of inputs its operator does not take, an
    /// empty required input, or no output.
    static func checkArity(_ key: String, _ node: ONNXNode, _ attrs: NodeAttributes) throws {
        let count = node.inputs.count
        if let range = inputCounts[key == "Reshape" && attrs.opset < 5 ? "Reshape@<5" : key] {
            guard range.contains(count) else {
                let expected = range.lowerBound == range.upperBound ? "\(range.lowerBound)"
                    : range.upperBound == Int.max ? "at least \(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
                throw attrs.error("\(count) input\(count == 1 ? "" : "s"); \(node.opType) takes \(expected)")
            }
            if let missing = node.inputs.prefix(range.lowerBound).firstIndex(where: \.isEmpty) {
                throw attrs.error("required input \(missing) is empty")
            }
        }
        guard node.outputs.contains(where: { !$0.isEmpty }) else { throw attrs.error("no output") }
    }
}
