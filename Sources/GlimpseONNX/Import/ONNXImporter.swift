import GlimpseEngine
import GlimpseTensor

/// Turns a parsed ONNX model into an engine `Graph` (no optimization; see `GraphOptimizer`).
enum ONNXImporter {
    static func importGraph(_ model: ONNXModel, name: String) throws -> Graph {
        guard let g = model.graph else { throw EngineError("\(name): the file has no graph (truncated or not an ONNX model)") }
        let graph = Graph(name: name)
        var ids: [String: Int] = [:]
        for initializer in g.initializers {
            let t = try TensorDecoding.decode(initializer, model: name)
            ids[initializer.name] = graph.addValue(name: initializer.name, constant: t)
        }
        for input in g.inputs where ids[input.name] == nil {
            guard let dims = input.dims else { throw EngineError("\(name): input '\(input.name)' has no shape") }
            let dtype: DType
            switch input.elemType {
            case 1: dtype = .float32
            case 10: dtype = .float16
            default: throw EngineError("\(name): input '\(input.name)' has element type \(input.elemType); only float32 and float16 are supported")
            }
            let shape = dims.enumerated().map { i, d in d ?? (i == 0 ? -1 : -2) }
            if shape.contains(-2) || shape.contains(where: { $0 == 0 }) {
                throw EngineError("\(name): input '\(input.name)' has a dynamic dimension other than the batch: \(dims)")
            }
            let v = graph.addValue(name: input.name)
            ids[input.name] = v
            graph.inputs.append((v, TensorSpec(name: input.name, shape: shape, dtype: dtype)))
        }
        guard !graph.inputs.isEmpty else { throw EngineError("\(name): the graph has no inputs") }
        let defaultOpset = Int(model.opsets[""] ?? 1)
        for node in g.nodes {
            let domain = node.domain == "ai.onnx" ? "" : node.domain
            let key = domain.isEmpty ? node.opType : "\(domain):\(node.opType)"
            let opset = Int(model.opsets[domain] ?? Int64(defaultOpset))
            let attrs = NodeAttributes(node: node, model: name, opset: opset)
            if key == "Constant" {
                // Constant nodes become constants directly.
                guard let out = node.outputs.first else { throw attrs.error("no output") }
                guard let t = try constantValue(attrs) else { throw attrs.error("no supported value attribute") }
                ids[out] = graph.addValue(name: out, constant: t)
                continue
            }
            guard let builder = OperatorRegistry.builders[key] else {
                throw EngineError("\(name): unsupported operator '\(node.opType)'\(domain.isEmpty ? "" : " (domain \(domain))") in node '\(node.name)'")
            }
            try OperatorRegistry.checkArity(key, node, attrs)
            let op = try builder(attrs)
            let inputs = try node.inputs.map { n -> Int in
                if n.isEmpty { return Graph.noValue }
                guard let v = ids[n] else { throw attrs.error("input '\(n)' is not defined before use") }
                return v
            }
            var outputs: [Int] = []
            for out in node.outputs where !out.isEmpty {
                let v = graph.addValue(name: out)
                ids[out] = v
                outputs.append(v)
            }
            graph.nodes.append(Graph.Node(op: op, inputs: inputs, outputs: outputs, name: node.name.isEmpty ? (node.outputs.first ?? "?") : node.name))
        }
        for out in g.outputs {
            guard let v = ids[out.name] else { throw EngineError("\(name): output '\(out.name)' is never produced") }
            graph.outputs.append((v, out.elemType == 10 ? .float16 : .float32))
        }
        guard !graph.outputs.isEmpty else { throw EngineError("\(name): the graph has no outputs") }
        return graph
    }

    static func constantValue(_ a: NodeAttributes) throws -> Tensor? {
        if let t = try a.tensor("value") { return t }
        if let f = a.find("value_float")?.f { return Tensor(shape: [], floats: [f]) }
        if let fs = a.find("value_floats")?.floats, !fs.isEmpty { return Tensor(shape: Shape([fs.count]), floats: fs) }
        if let i = a.find("value_int")?.i { return Tensor.int64([i], shape: []) }
        if let ints = a.find("value_ints"), !ints.ints.isEmpty { return Tensor.int64(ints.ints) }
        return nil
    }
}
