import GlimpseImage
import GlimpseServing

/// The parameters of `classify`, parsed and checked in one place for both front doors: the JSON-RPC
/// method and `POST /v1/classify` (query parameters and a raw image body).
public struct ClassifyParams: Sendable {
    /// What the serving layer runs.
    public var request: ClassifyRequest
    /// True when the call gave one `image` (or a REST body): the result is one object, not an array.
    public var single: Bool

    static let names: Set<String> = ["image", "images", "model", "top_k", "crop", "deadline_ms", "min_accuracy", "client_id"]
    /// The query parameters `POST /v1/classify` reads; others are ignored.
    static let queryNames: [String] = ["model", "top_k", "crop"]

    /// From JSON-RPC params (by name).
    public init(_ params: JSONValue?, limits: ServingConfiguration) throws {
        let p = try Params(params, method: "classify")
        try p.rejectUnknown(allowed: Self.names, method: "classify")
        let one = try p.string("image")
        let many = try p.stringArray("images")
        if one != nil && many != nil { throw RPCError.invalidParams("give either \"image\" or \"images\", not both") }
        let options = try Options(p, limits: limits)
        let images: [[UInt8]]
        if let one {
            images = [try Base64.decode(one, field: "image")]
        } else if let many {
            guard !many.isEmpty else { throw RPCError.invalidParams("\"images\" is empty") }
            guard many.count <= limits.maxImagesPerCall else {
                throw RPCError.invalidParams("\(many.count) images in one call; the limit is \(limits.maxImagesPerCall)", reason: "too_many_images")
            }
            images = try many.enumerated().map { try Base64.decode($1, field: "images[\($0)]") }
        } else {
            throw RPCError.invalidParams("missing \"image\" (a base64 JPEG or PNG) or \"images\"")
        }
        self.init(options, images: images, single: one != nil)
    }

    /// From `POST /v1/classify`: `model`, `top_k` and `crop` from the query, the image as the body.
    /// A query value is a string; `top_k` is read as the integer it spells, else refused as a string.
    public init(query: (String) -> String?, image: [UInt8], limits: ServingConfiguration) throws {
        var object: [String: JSONValue] = [:]
        for name in Self.queryNames {
            guard let value = query(name) else { continue }
            object[name] = name == "top_k" ? (Int(value).map(JSONValue.int) ?? .string(value)) : .string(value)
        }
        self.init(try Options(try Params(.object(object), method: "classify"), limits: limits), images: [image], single: true)
    }

    /// From an Open Inference Protocol request: `options` holds `model`, `top_k`, `crop` and
    /// `deadline_ms` as JSON-RPC would (checked the same way); the items are encoded images or
    /// preprocessed float32 tensors of shape `pixelShape`.
    init(options: [String: JSONValue], images: [[UInt8]], pixels: [[Float]], pixelShape: [Int], limits: ServingConfiguration) throws {
        self.init(try Options(try Params(.object(options), method: "infer"), limits: limits), images: images, single: false)
        request.pixels = pixels
        request.pixelShape = pixelShape
    }

    /// One decoded image and options already checked (`ClassifyCall`, which checks them as `Options` does).
    init(image: [UInt8], model: String, topK: Int, crop: CropMode?, deadlineMs: Double?, minAccuracy: Double?,
         clientID: String?) {
        request = ClassifyRequest(images: [image], model: model, topK: topK, crop: crop, deadlineMs: deadlineMs,
                                  minAccuracy: minAccuracy, clientID: clientID)
        single = true
    }

    private init(_ o: Options, images: [[UInt8]], single: Bool) {
        request = ClassifyRequest(images: images, model: o.model, topK: o.topK, crop: o.crop, deadlineMs: o.deadlineMs,
                                  minAccuracy: o.minAccuracy, clientID: o.clientID)
        self.single = single
    }

    /// Everything but the images: the checks both front doors share.
    private struct Options {
        var model: String
        var topK: Int
        var crop: CropMode?
        var deadlineMs: Double?
        var minAccuracy: Double?
        var clientID: String?

        init(_ p: Params, limits: ServingConfiguration) throws {
            // Without "model", the default model (--default-model) serves.
            model = try p.string("model") ?? "auto"
            topK = try p.int("top_k", in: 1...limits.maxTopK) ?? 5
            if let c = try p.string("crop") {
                guard let mode = CropMode(rawValue: c) else {
                    throw RPCError.invalidParams("\"crop\" must be one of center, fit, fill; got \"\(c)\"")
                }
                crop = mode
            }
            if let d = p.object["deadline_ms"], d != .null {
                guard let v = d.doubleValue, v > 0, v <= 3_600_000 else {
                    throw RPCError.invalidParams("\"deadline_ms\" must be a number of milliseconds between 0 and 3600000")
                }
                deadlineMs = v
            }
            if let a = p.object["min_accuracy"], a != .null {
                guard let v = a.doubleValue, v >= 0, v <= 1 else {
                    throw RPCError.invalidParams("\"min_accuracy\" must be a number between 0 and 1")
                }
                minAccuracy = v
            }
            clientID = try p.string("client_id")
            if let clientID, clientID.utf8.count > 256 { throw RPCError.invalidParams("\"client_id\" is longer than 256 bytes") }
        }
    }
}
