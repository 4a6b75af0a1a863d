/// A new classifier grafted onto a model: the base graph is cut at the input of its own classifier
/// (its pooled feature vector), and a `Gemm` + `Softmax` head over new classes takes its place.
/// The result is a standard ONNX file (the base's opset, no custom ops) that onnxruntime runs as
/// well as Glimpse. `glimpse train` uses it twice: with a zero head to extract features (the engine
/// runs the file up to `featureTensor`), then with the trained head.
///
/// The base's classifier is found by walking back from its output through weight-free nodes
/// (softmax, flatten, pooling, activation, dequantization) to the first matrix product or
/// convolution. Its data input is the feature tensor, and adapters make it a float vector:
/// `DequantizeLinear` when the classifier is a `QLinearMatMul`/`QLinearConv` (with the scale and zero
/// point it reads), `GlobalAveragePool` when it is a convolution (SqueezeNet's 1×1 classifier reads
/// a 512×13×13 map), then `Flatten`.
public struct ClassifierGraft: Sendable {
    /// Name of the float feature vector `[N, D]` in the grafted file.
    public static let featureTensor = "glimpse_features"
    /// Name of the output probabilities `[N, classes]`.
    public static let outputTensor = "probabilities"

    /// A hidden layer: `weights` `[units, features]` row-major, `bias` `[units]`, then ReLU.
    public struct Layer: Sendable {
        public var units: Int
        public var weights: [Float]
        public var bias: [Float]
        public init(units: Int, weights: [Float], bias: [Float]) {
            self.units = units
            self.weights = weights
            self.bias = bias
        }
    }

    /// The trained head: `weights` is `[classes, features]` row-major (`[classes, hidden units]` after
    /// a hidden layer), `bias` `[classes]`.
    public struct Head: Sendable {
        public var classes: Int
        public var features: Int
        public var hidden: Layer?
        public var weights: [Float]
        public var bias: [Float]
        public init(classes: Int, features: Int, weights: [Float], bias: [Float]) {
            self.classes = classes
            self.features = features
            self.weights = weights
            self.bias = bias
        }
        /// A head of zeros, for running the file up to the features.
        public static func zero(classes: Int, features: Int) -> Head {
            Head(classes: classes, features: features, weights: [Float](repeating: 0, count: classes * features),
                 bias: [Float](repeating: 0, count: classes))
        }
    }

    private let file: ONNXModelFile
    /// The base tensor the features come from, and the base node that read it.
    public let baseFeatureTensor: String
    public let baseClassifier: String
    private let adapters: [(opType: String, inputs: [String], ints: [(String, Int64)])]
    private let keptNodes: [Int]

    /// Reads `base` (ONNX bytes; `name` for messages) and finds its feature tensor. `featureTensor`
    /// names a float tensor to use instead (`[N, D]`; other shapes are flattened).
    public init(base bytes: [UInt8], name: String, featureTensor: String? = nil) throws {
        let file = try ONNXModelFile(bytes: bytes, name: name)
        self.file = file
        let found: Found
        if let featureTensor {
            found = try Self.named(featureTensor, in: file, model: name)
        } else {
            found = try Self.findClassifier(in: file, model: name)
        }
        baseFeatureTensor = found.tensor
        baseClassifier = found.classifier
        var adapters: [(String, [String], [(String, Int64)])] = []
        var current = found.tensor
        if let q = found.quantization {
            adapters.append(("DequantizeLinear", [current, q.scale, q.zeroPoint], []))
            current = "glimpse_features_dequantized"
        }
        if found.pool {
            adapters.append(("GlobalAveragePool", [current], []))
            current = "glimpse_features_pooled"
        }
        adapters.append(("Flatten", [current], [("axis", 1)]))
        self.adapters = adapters
        keptNodes = Self.producersNeeded(for: [found.tensor] + (found.quantization.map { [$0.scale, $0.zeroPoint] } ?? []), in: file)
    }

    /// How the feature tensor is reached, for the log: e.g. `472_quantized (DequantizeLinear, Flatten)`.
    public var featurePath: String {
        "\(baseFeatureTensor), the input of \(baseClassifier), through \(adapters.map(\.opType).joined(separator: ", "))"
    }

    /// The grafted model: the base up to its features, the adapters, `Gemm` with `head`, `Softmax`.
    /// `metadata` entries are added to the model's `metadata_props`.
    public func model(head: Head, metadata: [(key: String, value: String)] = []) throws -> [UInt8] {
        let inputs = head.hidden?.units ?? head.features
        guard head.classes >= 1, head.features >= 1, head.weights.count == head.classes * inputs, head.bias.count == head.classes,
              head.hidden.map({ $0.weights.count == $0.units * head.features && $0.bias.count == $0.units }) ?? true else {
            throw QuantizationError(.invalidArgument, "head of \(head.classes) classes × \(inputs) inputs has \(head.weights.count) weights and \(head.bias.count) biases, or a hidden layer of the wrong size")
        }
        let s = file.scanner
        var graph = ProtoWriter()
        let kept = Set(keptNodes)
        var used = Set<String>()
        for node in file.nodes where kept.contains(node.fieldIndex) { used.formUnion(node.inputs) }
        let initializers = Dictionary(file.initializers.map { ($0.fieldIndex, $0.name) }, uniquingKeysWith: { a, _ in a })
        let graphInputs = Dictionary(file.inputs.map { ($0.fieldIndex, $0.name) }, uniquingKeysWith: { a, _ in a })
        for (index, f) in file.graphFields.enumerated() {
            switch f.number {
            case 1: if kept.contains(index) { graph.raw(s.bytes[f.span]) }
            case 5: if let name = initializers[index], used.contains(name) { graph.raw(s.bytes[f.span]) }
            case 11: if let name = graphInputs[index], used.contains(name) { graph.raw(s.bytes[f.span]) }
            case 12, 13: break // new output below; value infos of the cut-off part would dangle
            default: graph.raw(s.bytes[f.span])
            }
        }
        for (i, a) in adapters.enumerated() {
            let output = i == adapters.count - 1 ? Self.featureTensor : (a.opType == "DequantizeLinear" ? "glimpse_features_dequantized" : "glimpse_features_pooled")
            graph.message(1, ONNXEncoding.node(a.opType, inputs: a.inputs, outputs: [output], name: "glimpse_head_\(a.opType.lowercased())", ints: a.ints))
        }
        var classifierInput = Self.featureTensor
        if let hidden = head.hidden {
            graph.message(5, ONNXEncoding.floatTensor(name: "glimpse_hidden_weight", dims: [hidden.units, head.features], values: hidden.weights))
            graph.message(5, ONNXEncoding.floatTensor(name: "glimpse_hidden_bias", dims: [hidden.units], values: hidden.bias))
            graph.message(1, ONNXEncoding.node("Gemm", inputs: [Self.featureTensor, "glimpse_hidden_weight", "glimpse_hidden_bias"],
                                                outputs: ["glimpse_hidden_linear"], name: "glimpse_hidden_gemm", ints: [("transB", 1)]))
            graph.message(1, ONNXEncoding.node("Relu", inputs: ["glimpse_hidden_linear"], outputs: ["glimpse_hidden"], name: "glimpse_hidden_relu"))
            classifierInput = "glimpse_hidden"
        }
        graph.message(5, ONNXEncoding.floatTensor(name: "glimpse_head_weight", dims: [head.classes, inputs], values: head.weights))
        graph.message(5, ONNXEncoding.floatTensor(name: "glimpse_head_bias", dims: [head.classes], values: head.bias))
        graph.message(1, ONNXEncoding.node("Gemm", inputs: [classifierInput, "glimpse_head_weight", "glimpse_head_bias"],
                                            outputs: ["glimpse_logits"], name: "glimpse_head_gemm", ints: [("transB", 1)]))
        graph.message(1, ONNXEncoding.node("Softmax", inputs: ["glimpse_logits"], outputs: [Self.outputTensor],
                                            name: "glimpse_head_softmax", ints: [("axis", 1)]))
        graph.message(12, Self.floatOutput(Self.outputTensor, dims: [nil, head.classes]))
        return file.model(graph: graph, metadata: metadata)
    }

    /// ValueInfoProto (name = 1, type = 2) of a float tensor: TypeProto.tensor_type = 1 (elem_type = 1,
    /// shape = 2 of Dimension = 1 with dim_value = 1 or dim_param = 2); nil dims are named `N`.
    static func floatOutput(_ name: String, dims: [Int?]) -> ProtoWriter {
        var shape = ProtoWriter()
        for d in dims {
            var dim = ProtoWriter()
            if let d { dim.int(1, Int64(d)) } else { dim.string(2, "N") }
            shape.message(1, dim)
        }
        var tensor = ProtoWriter()
        tensor.int(1, 1)
        tensor.message(2, shape)
        var type = ProtoWriter()
        type.message(1, tensor)
        var info = ProtoWriter()
        info.string(1, name)
        info.message(2, type)
        return info
    }
}

extension ClassifierGraft {
    struct Found {
        var tensor: String
        var classifier: String
        var quantization: (scale: String, zeroPoint: String)?
        var pool: Bool
    }

    static let matrixOps: Set<String> = ["Gemm", "MatMul", "QLinearMatMul"]
    static let convOps: Set<String> = ["Conv", "QLinearConv"]

    static func findClassifier(in file: ONNXModelFile, model: String) throws -> Found {
        let initializers = Set(file.initializers.map(\.name))
        var wanted = file.outputNames
        for node in file.nodes.reversed() where node.outputs.contains(where: { wanted.contains($0) }) {
            if matrixOps.contains(node.opType) || convOps.contains(node.opType) {
                guard let x = node.inputs.first, !initializers.contains(x) else { break }
                let quantized = node.opType.hasPrefix("QLinear") && node.inputs.count >= 3
                let label = "\(node.opType) node '\(node.outputs.first ?? "?")'"
                return Found(tensor: x, classifier: label,
                             quantization: quantized ? (node.inputs[1], node.inputs[2]) : nil, pool: convOps.contains(node.opType))
            }
            if node.opType.hasSuffix("Integer") { break }
            for i in node.inputs where !initializers.contains(i) && !i.isEmpty { wanted.insert(i) }
        }
        throw QuantizationError(.unsupportedModel, "\(model): no classifier (Gemm, MatMul, QLinearMatMul or a convolution) found before the output; name the feature tensor with --feature-tensor")
    }

    static func named(_ tensor: String, in file: ONNXModelFile, model: String) throws -> Found {
        guard let node = file.nodes.last(where: { $0.outputs.contains(tensor) }) else {
            throw QuantizationError(.invalidArgument, "\(model): no node computes a tensor named '\(tensor)'")
        }
        return Found(tensor: tensor, classifier: "\(node.opType) node '\(tensor)' (named)", quantization: nil, pool: false)
    }

    /// Field indices of the nodes needed to compute `tensors`, in file order.
    static func producersNeeded(for tensors: [String], in file: ONNXModelFile) -> [Int] {
        var wanted = Set(tensors)
        var kept: [Int] = []
        for node in file.nodes.reversed() where node.outputs.contains(where: { wanted.contains($0) }) {
            kept.append(node.fieldIndex)
            wanted.formUnion(node.inputs.filter { !$0.isEmpty })
        }
        return kept.reversed()
    }
}
