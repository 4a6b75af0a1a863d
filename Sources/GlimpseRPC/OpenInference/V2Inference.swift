import GlimpseServing

/// The response to a v2 infer request: the JSON header, then (binary data extension) the tensors that
/// asked for binary data, with the header's length for `Inference-Header-Content-Length`.
public struct V2InferReply: Sendable {
    public var body: [UInt8]
    /// The JSON header's length when binary data follows it; nil for a JSON-only body.
    public var headerLength: Int?
    /// What served, in the shape of a `classify` result (`model`, `variant`), for metrics.
    public var summary: JSONValue
}

/// The Open Inference Protocol (KServe v2) on Glimpse's serving path: infer runs as `classify` does
/// (model routing, batching, metrics, energy); the output is the model's tensor or the classification
/// extension's top classes.
public enum V2Inference {
    public static func infer(service: InferenceService, request: V2InferRequest) async throws -> V2InferReply {
        let results = try await service.classify(request.params.request)
        guard let first = results.first else { throw RPCError.internalError }
        let served = service.registry.all.first { $0.metadata.family == first.model && $0.metadata.variant == first.variant }
        let outputName = served?.model.outputs.first?.name ?? "output"
        let asked = request.outputs.isEmpty
            ? [V2RequestedOutput(name: outputName, binary: request.binaryByDefault, classification: nil)]
            : request.outputs
        var header: [JSONValue] = []
        var binary: [UInt8] = []
        for output in asked {
            guard output.name == outputName else {
                throw RPCError.invalidParams("model \(served?.name ?? first.model) has no output \"\(output.name)\"; it has \"\(outputName)\"")
            }
            var tensor: [String: JSONValue] = ["name": .string(output.name)]
            var data: [UInt8] = []
            if let k = output.classification {
                let elements = results.flatMap { r in r.predictions.prefix(k).map { classEntry($0, labelled: !(served?.labels.isEmpty ?? true)) } }
                tensor["datatype"] = "BYTES"
                tensor["shape"] = [.int(results.count), .int(min(k, first.predictions.count))]
                if output.binary {
                    for e in elements { V2Binary.appendLength(e.utf8.count, to: &data); data += Array(e.utf8) }
                } else {
                    tensor["data"] = .array(elements.map { .string($0) })
                }
            } else {
                tensor["datatype"] = "FP32"
                tensor["shape"] = .array(outputShape(served?.model.outputs.first?.shape, batch: results.count, count: first.scores.count).map { .int($0) })
                if output.binary {
                    for r in results { V2Binary.appendFloats(r.scores, to: &data) }
                } else {
                    tensor["data"] = .array(results.flatMap { $0.scores.map(number) })
                }
            }
            if output.binary {
                tensor["parameters"] = ["binary_data_size": .int(data.count)]
                binary += data
            }
            header.append(.object(tensor))
        }
        var document: [String: JSONValue] = [
            "model_name": .string(served?.name ?? first.model),
            "model_version": .string(first.version),
            "outputs": .array(header),
        ]
        if let id = request.id { document["id"] = .string(id) }
        let json = JSONValue.object(document).serialized()
        let summary: JSONValue = ["model": .string(first.model), "variant": .string(first.variant)]
        return V2InferReply(body: json + binary, headerLength: binary.isEmpty ? nil : json.count, summary: summary)
    }

    /// The classification extension's element: `score:index:label` (`score:index` without labels).
    static func classEntry(_ p: Prediction, labelled: Bool) -> String {
        labelled ? "\(p.score):\(p.index):\(p.label)" : "\(p.score):\(p.index)"
    }

    /// The model's output shape with the batch in front, when it accounts for `count` values per item.
    static func outputShape(_ declared: [Int]?, batch: Int, count: Int) -> [Int] {
        if let declared, declared.count >= 2, declared.dropFirst().reduce(1, *) == count { return [batch] + declared.dropFirst() }
        return [batch, count]
    }

    static func number(_ f: Float) -> JSONValue {
        f.isFinite ? .double(Double("\(f)") ?? Double(f)) : .null
    }
}
