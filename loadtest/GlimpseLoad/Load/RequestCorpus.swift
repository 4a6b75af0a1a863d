import Foundation

/// Options of the `classify` calls a corpus builds.
public struct ClassifyOptions: Sendable, Equatable {
    public var model: String
    public var topK: Int
    public var crop: String
    public var deadlineMs: Int?
    /// Images per call: 1 sends `"image"`, more send `"images": [...]`.
    public var imagesPerCall: Int
    /// Calls per HTTP request: 1 sends one JSON-RPC object, more send a batch array.
    public var rpcBatch: Int

    public init(model: String = "squeezenet1.1", topK: Int = 5, crop: String = "center", deadlineMs: Int? = nil,
                imagesPerCall: Int = 1, rpcBatch: Int = 1) {
        self.model = model
        self.topK = topK
        self.crop = crop
        self.deadlineMs = deadlineMs
        self.imagesPerCall = imagesPerCall
        self.rpcBatch = rpcBatch
    }

    public func validate() throws {
        guard !model.isEmpty else { throw LoadConfigError("model must not be empty") }
        guard (1...1000).contains(topK) else { throw LoadConfigError("top-k must be in 1...1000, got \(topK)") }
        guard ["center", "fit", "fill"].contains(crop) else { throw LoadConfigError("crop must be center, fit or fill, got \(crop)") }
        if let d = deadlineMs, !(1...3_600_000).contains(d) { throw LoadConfigError("deadline-ms must be in 1...3600000, got \(d)") }
        guard (1...256).contains(imagesPerCall) else { throw LoadConfigError("images-per-call must be in 1...256, got \(imagesPerCall)") }
        guard (1...256).contains(rpcBatch) else { throw LoadConfigError("rpc-batch must be in 1...256, got \(rpcBatch)") }
    }
}

/// The requests of a run, built once up front (images base64-encoded once) and cycled.
public struct RequestCorpus: Sendable {
    public let method: String
    public let path: String
    public let headers: [(String, String)]
    public let bodies: [[UInt8]]
    /// JSON-RPC calls per request (for per-call accounting).
    public let callsPerRequest: Int
    /// Per body, the true class of each image it sends, in the order of the answers (empty: unlabelled).
    public var expectedLabels: [[String]] = []
    /// Per body, headers sent after `headers` with it alone (cycled with the bodies; empty: none).
    public var bodyHeaders: [[(String, String)]] = []
    /// Requests with their header blocks encoded, per authority (built lazily by `prepare`).
    private var prepared: [H2Request] = []
    private var preparedAuthority = ""
    private var preparedScheme = ""

    public init(method: String, path: String, headers: [(String, String)] = [], bodies: [[UInt8]], callsPerRequest: Int = 1) {
        self.method = method
        self.path = path
        self.headers = headers
        self.bodies = bodies
        self.callsPerRequest = callsPerRequest
    }

    /// A body-less request, e.g. `GET /healthz` to measure the generator's own ceiling.
    public static func plain(method: String = "GET", path: String) -> RequestCorpus {
        RequestCorpus(method: method, path: path, bodies: [], callsPerRequest: 0)
    }

    /// POSTs the bytes of a JSON file as they are.
    public static func bodyFile(_ url: URL, path: String = "/rpc") throws -> RequestCorpus {
        guard let data = try? Data(contentsOf: url) else { throw LoadConfigError("cannot read body file \(url.path)") }
        let bytes = [UInt8](data)
        let calls = bytes.first(where: { !($0 == 32 || $0 == 10 || $0 == 13 || $0 == 9) }) == UInt8(ascii: "[") ? 0 : 1
        return RequestCorpus(method: "POST", path: path, headers: [("content-type", "application/json")], bodies: [bytes],
                             callsPerRequest: calls)
    }

    /// `classify` calls over the images of a folder (jpg, jpeg, png; sorted by name, cycled).
    /// At most `maxBodies` distinct bodies are prepared.
    public static func classify(imagesIn folder: URL, options: ClassifyOptions, path: String = "/rpc", maxBodies: Int = 64) throws -> RequestCorpus {
        try options.validate()
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: folder.path) } catch {
            throw LoadConfigError("cannot list image folder \(folder.path)")
        }
        let images = names.filter { ["jpg", "jpeg", "png"].contains(($0 as NSString).pathExtension.lowercased()) }.sorted()
        let encoded = images.compactMap { try? Data(contentsOf: folder.appendingPathComponent($0)).base64EncodedString() }
        guard !encoded.isEmpty else { throw LoadConfigError("no readable .jpg/.jpeg/.png images in \(folder.path)") }
        return classify(base64Images: encoded, options: options, path: path, maxBodies: maxBodies)
    }

    /// `classify` calls over labelled images (in the given order, one body per call group, all of them
    /// up to `maxBodies`), with the true class of each image kept per body for `expectedLabels`.
    public static func classify(labelled: LabelledImages, options: ClassifyOptions, path: String = "/rpc",
                                maxBodies: Int = 100_000) throws -> RequestCorpus {
        try options.validate()
        var encoded: [String] = []
        var labels: [String] = []
        for item in labelled.items {
            guard let data = try? Data(contentsOf: URL(fileURLWithPath: item.path)) else { throw LoadConfigError("cannot read image \(item.path)") }
            encoded.append(data.base64EncodedString())
            labels.append(item.label)
        }
        guard !encoded.isEmpty else { throw LoadConfigError("no labelled images") }
        return classify(base64Images: encoded, labels: labels, options: options, path: path, maxBodies: maxBodies)
    }

    /// `classify` calls over already-encoded images (with `labels`, one per image, kept per body).
    public static func classify(base64Images: [String], labels: [String]? = nil, options: ClassifyOptions, path: String = "/rpc",
                                maxBodies: Int = 64) -> RequestCorpus {
        let perRequest = options.imagesPerCall * options.rpcBatch
        let count = max(1, min(maxBodies, (base64Images.count + perRequest - 1) / perRequest))
        var bodies: [[UInt8]] = []
        var expected: [[String]] = []
        var cursor = 0
        for _ in 0..<count {
            var calls: [String] = []
            var bodyLabels: [String] = []
            for call in 0..<options.rpcBatch {
                var picks: [String] = []
                for _ in 0..<options.imagesPerCall {
                    let i = cursor % max(base64Images.count, 1)
                    picks.append(base64Images[i])
                    if let labels { bodyLabels.append(labels[i]) }
                    cursor += 1
                }
                calls.append(classifyCall(id: call + 1, images: picks, options: options))
            }
            let text = options.rpcBatch == 1 ? calls[0] : "[" + calls.joined(separator: ",") + "]"
            bodies.append(Array(text.utf8))
            expected.append(bodyLabels)
        }
        var corpus = RequestCorpus(method: "POST", path: path, headers: [("content-type", "application/json")], bodies: bodies,
                                   callsPerRequest: options.rpcBatch)
        if labels != nil { corpus.expectedLabels = expected }
        return corpus
    }

    static func classifyCall(id: Int, images: [String], options: ClassifyOptions) -> String {
        var params = images.count == 1 ? "\"image\":\"\(images[0])\"" : "\"images\":[" + images.map { "\"\($0)\"" }.joined(separator: ",") + "]"
        params += ",\"model\":\(jsonString(options.model)),\"top_k\":\(options.topK),\"crop\":\(jsonString(options.crop))"
        if let d = options.deadlineMs { params += ",\"deadline_ms\":\(d)" }
        return "{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"classify\",\"params\":{\(params)}}"
    }

    /// The request for the `index`-th send (bodies cycle).
    public func request(_ index: Int, authority: String, scheme: String = "http") -> H2Request {
        if authority == preparedAuthority && scheme == preparedScheme && !prepared.isEmpty { return prepared[index % prepared.count] }
        let body = bodies.isEmpty ? nil : bodies[index % bodies.count]
        let extra = bodyHeaders.isEmpty ? [] : bodyHeaders[index % bodyHeaders.count]
        return H2Request(method: method, path: path, authority: authority, headers: headers + extra, body: body, scheme: scheme)
    }

    /// A copy whose requests for `authority` and `scheme` have their header blocks encoded once.
    public func prepared(for authority: String, scheme: String = "http") -> RequestCorpus {
        var copy = self
        copy.preparedAuthority = authority
        copy.preparedScheme = scheme
        copy.prepared = (0..<max(bodies.count, 1)).map { request($0, authority: authority, scheme: scheme).prepared() }
        return copy
    }
}

/// A JSON string literal with the required escapes.
func jsonString(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}
