import GlimpseServing

/// Metadata documents of the Open Inference Protocol, and the model a v2 path names.
public enum V2Metadata {
    /// The protocol extensions Glimpse speaks.
    public static let extensions: [String] = ["binary_tensor_data", "classification"]

    public static func server(version: String) -> JSONValue {
        ["name": "glimpse", "version": .string(version), "extensions": .array(extensions.map { .string($0) })]
    }

    /// The loaded model a path names: an exact variant, or a family (its most accurate variant
    /// describes it); with a version, only that version. Unknown names are a 404 (`unknown_model`).
    public static func model(_ name: String, version: String?, registry: ModelRegistry) throws -> LoadedModel {
        let all = registry.all
        let candidates = registry.model(named: name).map { [$0] }
            ?? all.filter { $0.metadata.family == name }.sorted { ($0.metadata.accuracy ?? 0, $1.name) > ($1.metadata.accuracy ?? 0, $0.name) }
        guard let found = candidates.first(where: { version == nil || $0.metadata.version == version }) else {
            let what = version.map { "version \"\($0)\" of " } ?? ""
            throw RPCError.invalidParams("no loaded model \(what)\"\(name)\"", reason: "unknown_model")
        }
        return found
    }

    /// Model metadata: the FP32 input tensor the model runs on, the BYTES input of encoded images
    /// Glimpse decodes for it, and the model's output; −1 stands for the batch.
    public static func model(_ m: LoadedModel) -> JSONValue {
        let inputs = m.model.inputs.map { tensor($0.name, datatype: datatype($0.dtype.rawValue), shape: $0.shape) }
        let outputs = m.model.outputs.map { tensor($0.name, datatype: datatype($0.dtype.rawValue), shape: $0.shape) }
        return [
            "name": .string(m.name),
            "versions": [.string(m.metadata.version)],
            "platform": "onnx",
            "inputs": .array(inputs + [["name": "image", "datatype": "BYTES", "shape": [-1]]]),
            "outputs": .array(outputs),
        ]
    }

    static func tensor(_ name: String, datatype: String, shape: [Int]) -> JSONValue {
        let dims = shape.enumerated().map { i, d in i == 0 || d <= 0 ? -1 : d }
        return ["name": .string(name), "datatype": .string(datatype), "shape": .array(dims.map { .int($0) })]
    }

    /// The protocol's name of a tensor element type.
    static func datatype(_ dtype: String) -> String {
        switch dtype {
        case "float32": return "FP32"
        case "float16": return "FP16"
        case "uint8": return "UINT8"
        case "int8": return "INT8"
        case "int32": return "INT32"
        case "int64": return "INT64"
        default: return dtype.uppercased()
        }
    }
}
