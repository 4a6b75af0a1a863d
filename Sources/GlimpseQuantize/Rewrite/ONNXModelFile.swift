/// A serialized ONNX model split into the parts the quantizer rewrites. Everything else stays as
/// the original bytes, so fields this code does not know (doc strings, metadata, value infos,
/// training info, functions) survive unchanged.
///
/// Field numbers (onnx.proto): ModelProto graph = 7, opset_import = 8 (OperatorSetIdProto domain = 1,
/// version = 2); GraphProto node = 1, initializer = 5, input = 11, output = 12; NodeProto input = 1,
/// output = 2, name = 3, op_type = 4, attribute = 5, domain = 7; AttributeProto name = 1, i = 3;
/// ValueInfoProto name = 1; TensorProto dims = 1, data_type = 2, float_data = 4, name = 8,
/// raw_data = 9, external_data = 13, data_location = 14.
struct ONNXModelFile {
    struct Node {
        var opType: String
        var domain: String
        var inputs: [String]
        var outputs: [String]
        /// Integer attributes by name (what role detection needs: Gemm's transB).
        var intAttributes: [String: Int64]
        /// Index of this node's field in `graphFields`.
        var fieldIndex = 0
    }

    struct Initializer {
        var name: String
        var dims: [Int]
        var dataType: Int
        /// Index of this initializer's field in `graphFields`.
        var fieldIndex: Int
        var rawData: Range<Int>?
        var floatData: [ProtoField] = []
        var isExternal = false
        var count: Int { dims.reduce(1, *) }
    }

    let scanner: ProtoScanner
    let modelFields: [ProtoField]
    let graphFieldIndex: Int
    let graphFields: [ProtoField]
    /// Version of the default ("" / "ai.onnx") operator set.
    let opset: Int64
    let nodes: [Node]
    let initializers: [Initializer]
    /// Graph inputs (field index, name).
    let inputs: [(fieldIndex: Int, name: String)]
    let outputNames: Set<String>

    init(bytes: [UInt8], name: String) throws {
        guard !bytes.isEmpty else { throw QuantizationError(.malformedModel, "\(name): empty model file") }
        let s = ProtoScanner(bytes: bytes, context: name)
        scanner = s
        modelFields = try s.fields(in: 0..<bytes.count, "ModelProto")
        guard let g = modelFields.lastIndex(where: { $0.number == 7 && $0.wire == 2 }) else {
            throw QuantizationError(.malformedModel, "\(name): the file has no graph (truncated or not an ONNX model)")
        }
        graphFieldIndex = g
        var opset: Int64?
        for f in modelFields where f.number == 8 && f.wire == 2 {
            var domain = "", version: Int64 = 0
            for o in try s.fields(in: f.payload, "OperatorSetIdProto") {
                if o.number == 1 && o.wire == 2 { domain = s.string(o) }
                if o.number == 2 && o.wire == 0 { version = Int64(bitPattern: o.value) }
            }
            if domain.isEmpty || domain == "ai.onnx" { opset = version }
        }
        guard let opset else { throw QuantizationError(.malformedModel, "\(name): no opset_import for the default ONNX domain") }
        self.opset = opset
        graphFields = try s.fields(in: modelFields[g].payload, "GraphProto")

        var nodes: [Node] = [], initializers: [Initializer] = [], inputs: [(Int, String)] = []
        var outputs = Set<String>()
        for (index, f) in graphFields.enumerated() where f.wire == 2 {
            switch f.number {
            case 1:
                var n = try ONNXModelFile.node(s, f)
                n.fieldIndex = index
                nodes.append(n)
            case 5: initializers.append(try ONNXModelFile.initializer(s, f, index: index))
            case 11, 12:
                var valueName = ""
                for v in try s.fields(in: f.payload, "ValueInfoProto") where v.number == 1 && v.wire == 2 {
                    valueName = s.string(v)
                }
                if f.number == 11 { inputs.append((index, valueName)) } else { outputs.insert(valueName) }
            default: break
            }
        }
        guard !nodes.isEmpty else { throw QuantizationError(.malformedModel, "\(name): the graph has no nodes") }
        self.nodes = nodes
        self.initializers = initializers
        self.inputs = inputs
        self.outputNames = outputs
    }

    private static func node(_ s: ProtoScanner, _ f: ProtoField) throws -> Node {
        var n = Node(opType: "", domain: "", inputs: [], outputs: [], intAttributes: [:])
        for field in try s.fields(in: f.payload, "NodeProto") {
            switch (field.number, field.wire) {
            case (1, 2): n.inputs.append(s.string(field))
            case (2, 2): n.outputs.append(s.string(field))
            case (4, 2): n.opType = s.string(field)
            case (7, 2): n.domain = s.string(field)
            case (5, 2):
                var attrName = "", value: Int64?
                for a in try s.fields(in: field.payload, "AttributeProto") {
                    if a.number == 1 && a.wire == 2 { attrName = s.string(a) }
                    if a.number == 3 && a.wire == 0 { value = Int64(bitPattern: a.value) }
                }
                if let value { n.intAttributes[attrName] = value }
            default: break
            }
        }
        return n
    }

    /// The model's bytes with `graph` in place of its graph and a `glimpse.quantization` metadata
    /// entry holding `note`; every other field is copied as it is.
    func model(graph: ProtoWriter, quantizationNote note: String) -> [UInt8] {
        model(graph: graph, metadata: [("glimpse.quantization", note)])
    }

    /// The model's bytes with `graph` in place of its graph and `metadata` entries added; every
    /// other field is copied as it is.
    func model(graph: ProtoWriter, metadata: [(key: String, value: String)]) -> [UInt8] {
        var model = ProtoWriter()
        for (index, f) in modelFields.enumerated() {
            if index == graphFieldIndex { model.message(7, graph) } else { model.raw(scanner.bytes[f.span]) }
        }
        for entry in metadata { model.message(14, ONNXEncoding.metadataEntry(key: entry.key, value: entry.value)) }
        return model.bytes
    }

    /// The node re-encoded with other inputs and outputs; every other field (name, op type,
    /// attributes, domain, doc string) is copied as it is.
    func node(_ n: Node, inputs: [String], outputs: [String]) throws -> ProtoWriter {
        var w = ProtoWriter()
        for i in inputs { w.string(1, i) }
        for o in outputs { w.string(2, o) }
        for field in try scanner.fields(in: graphFields[n.fieldIndex].payload, "NodeProto") where field.number != 1 && field.number != 2 {
            w.raw(scanner.bytes[field.span])
        }
        return w
    }

    private static func initializer(_ s: ProtoScanner, _ f: ProtoField, index: Int) throws -> Initializer {
        var t = Initializer(name: "", dims: [], dataType: 0, fieldIndex: index)
        var dims: [Int64] = []
        for field in try s.fields(in: f.payload, "TensorProto") {
            switch (field.number, field.wire) {
            case (1, _): try s.appendInts(field, to: &dims, "TensorProto.dims")
            case (2, 0): t.dataType = Int(field.value)
            case (4, _): t.floatData.append(field)
            case (8, 2): t.name = s.string(field)
            case (9, 2): t.rawData = field.payload
            case (13, _): t.isExternal = true
            case (14, 0): if field.value == 1 { t.isExternal = true }
            default: break
            }
        }
        guard dims.allSatisfy({ $0 >= 0 && $0 < (1 << 31) }) else {
            throw QuantizationError(.malformedModel, "\(s.context): tensor '\(t.name)' has invalid dims \(dims)")
        }
        t.dims = dims.map { Int($0) }
        return t
    }

    /// The values of a FLOAT initializer.
    func floats(_ t: Initializer) throws -> [Float] {
        func fail(_ why: String) -> QuantizationError {
            QuantizationError(.malformedModel, "\(scanner.context): tensor '\(t.name)': \(why)")
        }
        guard !t.isExternal else {
            throw QuantizationError(.unsupportedModel, "\(scanner.context): tensor '\(t.name)' uses external data; embed the weights in the .onnx file")
        }
        let n = t.count
        var out = [Float](repeating: 0, count: n)
        let b = scanner.bytes
        if let raw = t.rawData {
            guard raw.count == n * 4 else { throw fail("raw_data has \(raw.count) bytes, dims \(t.dims) need \(n * 4)") }
            for i in 0..<n {
                let p = raw.lowerBound + i * 4
                out[i] = Float(bitPattern: UInt32(b[p]) | UInt32(b[p + 1]) << 8 | UInt32(b[p + 2]) << 16 | UInt32(b[p + 3]) << 24)
            }
            return out
        }
        var i = 0
        for f in t.floatData {
            let range = f.wire == 5 || f.wire == 2 ? f.payload : 0..<0
            guard range.count % 4 == 0, i + range.count / 4 <= n else { throw fail("float_data does not match dims \(t.dims)") }
            var p = range.lowerBound
            while p < range.upperBound {
                out[i] = Float(bitPattern: UInt32(b[p]) | UInt32(b[p + 1]) << 8 | UInt32(b[p + 2]) << 16 | UInt32(b[p + 3]) << 24)
                i += 1
                p += 4
            }
        }
        guard i == n else { throw fail("float_data has \(i) values, dims \(t.dims) need \(n)") }
        return out
    }
}
