import Foundation

/// What requests speak: Glimpse's JSON-RPC `classify`, or the Open Inference Protocol (KServe v2) infer.
public enum LoadProtocol: String, Sendable, Equatable, CaseIterable {
    case jsonRPC = "jsonrpc"
    case v2
}

/// The tensor names a v2 infer request uses: the BYTES input the image goes in, and the output the
/// classification extension is asked of.
public struct V2TensorNames: Sendable, Equatable {
    public var input: String
    public var output: String

    public init(input: String, output: String) {
        self.input = input
        self.output = output
    }

    /// Reads `GET /v2/models/{model}` once: the first BYTES input (or `input` when given) and the first output.
    public static func fetch(host: String, port: Int, tls: TLSOptions?, model: String, input: String? = nil) throws -> V2TensorNames {
        let client = try H2Client(host: host, port: port, requestTimeout: 30, tls: tls)
        defer { client.close() }
        let response = try client.getBlocking(path: "/v2/models/" + pathSegment(model))
        guard response.status == 200, let json = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] else {
            throw LoadConfigError("GET /v2/models/\(model) answered \(response.status): \(response.bodyString.prefix(200))")
        }
        let inputs = json["inputs"] as? [[String: Any]] ?? []
        let outputs = json["outputs"] as? [[String: Any]] ?? []
        guard let chosen = input ?? inputs.first(where: { $0["datatype"] as? String == "BYTES" })?["name"] as? String else {
            throw LoadConfigError("model \(model) has no BYTES input for encoded images; name one with --v2-input")
        }
        guard let output = outputs.first?["name"] as? String else { throw LoadConfigError("model \(model) lists no output") }
        return V2TensorNames(input: chosen, output: output)
    }

    /// A model name as one path segment (percent-encoded where it must be).
    static func pathSegment(_ name: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove("/")
        return name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name
    }
}

extension RequestCorpus {
    /// v2 infer requests over the images of a folder (jpg, jpeg, png; sorted by name, cycled), one image
    /// per request with the binary data extension.
    public static func openInference(imagesIn folder: URL, options: ClassifyOptions, names: V2TensorNames,
                                     maxBodies: Int = 64) throws -> RequestCorpus {
        try options.validate()
        let files: [String]
        do { files = try FileManager.default.contentsOfDirectory(atPath: folder.path) } catch {
            throw LoadConfigError("cannot list image folder \(folder.path)")
        }
        let images = files.filter { ["jpg", "jpeg", "png"].contains(($0 as NSString).pathExtension.lowercased()) }.sorted()
            .prefix(maxBodies).compactMap { try? [UInt8](Data(contentsOf: folder.appendingPathComponent($0))) }
        guard !images.isEmpty else { throw LoadConfigError("no readable .jpg/.jpeg/.png images in \(folder.path)") }
        return openInference(images: images, options: options, names: names)
    }

    /// v2 infer requests over labelled images (in the given order), the true class of each kept per body.
    public static func openInference(labelled: LabelledImages, options: ClassifyOptions, names: V2TensorNames,
                                     maxBodies: Int = 100_000) throws -> RequestCorpus {
        try options.validate()
        var images: [[UInt8]] = []
        var labels: [[String]] = []
        for item in labelled.items.prefix(maxBodies) {
            guard let data = try? Data(contentsOf: URL(fileURLWithPath: item.path)) else { throw LoadConfigError("cannot read image \(item.path)") }
            images.append([UInt8](data))
            labels.append([item.label])
        }
        guard !images.isEmpty else { throw LoadConfigError("no labelled images") }
        var corpus = openInference(images: images, options: options, names: names)
        corpus.expectedLabels = labels
        return corpus
    }

    /// One request per image: a JSON header naming the BYTES input (`binary_data_size`) and asking for the
    /// classification extension's top `topK` as JSON, then the element (4-byte little-endian length and
    /// the encoded image); `Inference-Header-Content-Length` gives the header's size.
    public static func openInference(images: [[UInt8]], options: ClassifyOptions, names: V2TensorNames) -> RequestCorpus {
        var bodies: [[UInt8]] = []
        var headers: [[(String, String)]] = []
        for image in images {
            let header = Array(v2Header(imageBytes: image.count, options: options, names: names).utf8)
            var body = header
            body.reserveCapacity(header.count + 4 + image.count)
            let n = UInt32(image.count)
            body += [UInt8(n & 0xff), UInt8((n >> 8) & 0xff), UInt8((n >> 16) & 0xff), UInt8(n >> 24)]
            body += image
            bodies.append(body)
            headers.append([("inference-header-content-length", String(header.count))])
        }
        var corpus = RequestCorpus(method: "POST", path: "/v2/models/" + V2TensorNames.pathSegment(options.model) + "/infer",
                                   headers: [("content-type", "application/octet-stream")], bodies: bodies)
        corpus.bodyHeaders = headers
        return corpus
    }

    static func v2Header(imageBytes: Int, options: ClassifyOptions, names: V2TensorNames) -> String {
        var parameters = "\"crop\":\(jsonString(options.crop))"
        if let d = options.deadlineMs { parameters += ",\"deadline_ms\":\(d)" }
        return "{\"inputs\":[{\"name\":\(jsonString(names.input)),\"shape\":[1],\"datatype\":\"BYTES\","
            + "\"parameters\":{\"binary_data_size\":\(imageBytes + 4)}}],"
            + "\"outputs\":[{\"name\":\(jsonString(names.output)),\"parameters\":{\"classification\":\(options.topK),\"binary_data\":false}}],"
            + "\"parameters\":{\(parameters)}}"
    }
}
