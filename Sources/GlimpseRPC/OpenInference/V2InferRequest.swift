import GlimpseServing

/// One output a v2 infer request asks for.
public struct V2RequestedOutput: Sendable, Equatable {
    public var name: String
    /// Send the tensor after the JSON header (binary data extension) instead of in `data`.
    public var binary: Bool
    /// Classification extension: the top `classification` classes as BYTES `"score:index:label"`.
    public var classification: Int?

    public init(name: String, binary: Bool = false, classification: Int? = nil) {
        self.name = name
        self.binary = binary
        self.classification = classification
    }
}

/// An Open Inference Protocol (KServe v2) infer request, parsed and checked: its items become a
/// `classify` request through the same parameter checks as JSON-RPC.
public struct V2InferRequest: Sendable {
    /// The request's `id`, echoed in the response.
    public var id: String?
    public var params: ClassifyParams
    /// Outputs asked for; empty means every output of the model.
    public var outputs: [V2RequestedOutput]
    /// `binary_data_output`: the default of `binary` for outputs that do not say.
    public var binaryByDefault: Bool

    /// Request-level parameters Glimpse reads; others (e.g. `priority`, `sequence_id`) are accepted and ignored.
    static let deadlineParameters = ["timeout", "deadline_ms"]

    /// Parses `body`: the JSON header alone, or (binary data extension) `headerLength` bytes of JSON
    /// followed by the binary tensor data its inputs point at with `binary_data_size`.
    public init(body: [UInt8], headerLength: Int?, model: String, limits: ServingConfiguration) throws {
        let jsonEnd = headerLength ?? body.count
        guard jsonEnd >= 0 && jsonEnd <= body.count else {
            throw RPCError.invalidRequest("Inference-Header-Content-Length \(jsonEnd) is outside the body of \(body.count) bytes")
        }
        let document: JSONValue
        do {
            document = try JSONValue.parse(Array(body[0..<jsonEnd]))
        } catch {
            throw RPCError.parseError("the inference request header is not valid JSON: \(error)")
        }
        guard case .object(let object) = document else {
            throw RPCError.invalidRequest("the inference request must be a JSON object, got \(document.typeName)")
        }
        let parameters = try V2Fields.object(object["parameters"], field: "parameters")
        id = try V2Fields.string(object["id"], field: "id")
        binaryByDefault = try V2Fields.bool(parameters["binary_data_output"], field: "parameters.binary_data_output") ?? false
        outputs = try V2InferRequest.requestedOutputs(object["outputs"], limits: limits)

        guard case .array(let inputs)? = object["inputs"], !inputs.isEmpty else {
            throw RPCError.invalidParams("\"inputs\" must be a non-empty array of tensors")
        }
        guard inputs.count == 1 else {
            throw RPCError.invalidParams("Glimpse models take one input tensor (BYTES encoded images or FP32 preprocessed), got \(inputs.count)")
        }
        var binary = V2Binary(bytes: body, offset: jsonEnd)
        let tensor = try V2InputTensor(inputs[0], requestParameters: parameters, binary: &binary, limits: limits)
        guard binary.remaining == 0 else {
            throw RPCError.invalidParams("\(binary.remaining) bytes of binary data after the tensors that binary_data_size accounts for")
        }

        var options: [String: JSONValue] = ["model": .string(model)]
        let k = outputs.compactMap(\.classification).max() ?? 1
        options["top_k"] = .int(k)
        if let crop = parameters["crop"] { options["crop"] = crop }
        options["deadline_ms"] = try V2InferRequest.deadlineMs(parameters)
        params = try ClassifyParams(options: options, images: tensor.images, pixels: tensor.pixels,
                                    pixelShape: tensor.pixelShape, limits: limits)
    }

    /// `timeout` in microseconds (Triton's request parameter) or `deadline_ms`, as `deadline_ms`.
    static func deadlineMs(_ parameters: [String: JSONValue]) throws -> JSONValue {
        if let t = parameters["timeout"], t != .null {
            guard let us = t.doubleValue, us > 0 else {
                throw RPCError.invalidParams("parameters.timeout must be a positive number of microseconds")
            }
            return .double(us / 1000)
        }
        return parameters["deadline_ms"] ?? .null
    }

    static func requestedOutputs(_ value: JSONValue?, limits: ServingConfiguration) throws -> [V2RequestedOutput] {
        guard let value, value != .null else { return [] }
        guard case .array(let items) = value else { throw RPCError.invalidParams("\"outputs\" must be an array") }
        return try items.enumerated().map { i, item in
            guard case .object(let o) = item, let name = o["name"]?.stringValue else {
                throw RPCError.invalidParams("outputs[\(i)] must be an object with a string \"name\"")
            }
            let p = try V2Fields.object(o["parameters"], field: "outputs[\(i)].parameters")
            var k: Int?
            if let c = p["classification"], c != .null {
                guard let v = c.intValue, v >= 1, v <= limits.maxTopK else {
                    throw RPCError.invalidParams("outputs[\(i)].parameters.classification must be an integer between 1 and \(limits.maxTopK)")
                }
                k = v
            }
            return V2RequestedOutput(name: name, binary: try V2Fields.bool(p["binary_data"], field: "outputs[\(i)].parameters.binary_data") ?? false,
                                     classification: k)
        }
    }
}

/// The one input tensor of a v2 request, as encoded images or preprocessed items.
struct V2InputTensor {
    var images: [[UInt8]] = []
    var pixels: [[Float]] = []
    var pixelShape: [Int] = []

    init(_ input: JSONValue, requestParameters: [String: JSONValue], binary: inout V2Binary, limits: ServingConfiguration) throws {
        guard case .object(let o) = input else { throw RPCError.invalidParams("inputs[0] must be an object") }
        guard let datatype = o["datatype"]?.stringValue else { throw RPCError.invalidParams("inputs[0].datatype must be a string") }
        guard case .array(let dims)? = o["shape"], !dims.isEmpty else {
            throw RPCError.invalidParams("inputs[0].shape must be a non-empty array of integers")
        }
        let shape = try dims.map { d -> Int in
            guard let v = d.intValue, v >= 0, v <= 1 << 24 else { throw RPCError.invalidParams("inputs[0].shape must hold integers from 0 to 2^24") }
            return v
        }
        let batch = shape[0]
        guard batch >= 1 && batch <= limits.maxImagesPerCall else {
            throw RPCError.invalidParams("inputs[0].shape[0] is the batch: between 1 and \(limits.maxImagesPerCall), got \(batch)", reason: "too_many_images")
        }
        let parameters = try V2Fields.object(o["parameters"], field: "inputs[0].parameters")
        var size: Int?
        if let s = parameters["binary_data_size"], s != .null {
            guard let v = s.intValue, v >= 0 else { throw RPCError.invalidParams("inputs[0].parameters.binary_data_size must be a non-negative integer") }
            size = v
        }
        let raw = try size.map { try binary.take($0) }
        if raw == nil && (o["data"] == nil || o["data"] == .null) {
            throw RPCError.invalidParams("inputs[0] has neither \"data\" nor parameters.binary_data_size")
        }
        switch datatype {
        case "BYTES":
            guard shape.count == 1 || (shape.count == 2 && shape[1] == 1) else {
                throw RPCError.invalidParams("a BYTES input holds one encoded image per element: shape [N] or [N,1], got \(shape)")
            }
            if let raw {
                images = try V2Binary.splitBytes(raw)
            } else {
                let contentType = parameters["content_type"]?.stringValue ?? requestParameters["content_type"]?.stringValue
                guard contentType == "base64" else {
                    throw RPCError.invalidParams("BYTES elements in JSON must be base64 strings marked with \"parameters\": {\"content_type\": \"base64\"}; raw image bytes cannot travel in JSON strings (or send them with the binary data extension)")
                }
                images = try V2Fields.flatten(o["data"]).enumerated().map { i, e in
                    guard let s = e.stringValue else { throw RPCError.invalidParams("inputs[0].data[\(i)] must be a base64 string") }
                    return try Base64.decode(s, field: "inputs[0].data[\(i)]")
                }
            }
            guard images.count == batch else {
                throw RPCError.invalidParams("inputs[0] has \(images.count) elements but its shape says \(batch)")
            }
        case "FP32":
            pixelShape = Array(shape.dropFirst())
            let perItem = pixelShape.reduce(1, *)
            guard perItem > 0 && perItem <= 1 << 26 else { throw RPCError.invalidParams("inputs[0].shape \(shape) describes no usable item") }
            let values = try raw.map { try V2Binary.floats($0) } ?? V2Fields.flatten(o["data"]).enumerated().map { i, e in
                guard let d = e.doubleValue else { throw RPCError.invalidParams("inputs[0].data[\(i)] must be a number") }
                return Float(d)
            }
            guard values.count == batch * perItem else {
                throw RPCError.invalidParams("inputs[0] has \(values.count) values but its shape \(shape) needs \(batch * perItem)")
            }
            pixels = (0..<batch).map { Array(values[($0 * perItem)..<(($0 + 1) * perItem)]) }
        default:
            throw RPCError.invalidParams("inputs[0].datatype \(datatype) is not served: send BYTES (encoded JPEG/PNG images) or FP32 (a preprocessed tensor)")
        }
    }
}
