import Foundation
import GlimpseImage
import GlimpseTensor

/// A model's metadata as written in a sidecar `<model>.json` or a `models.json` entry. Members other
/// than these (benchmark records, sources, licences) are kept by the manifest writer, not read here.
public struct MetadataDocument: Codable, Sendable, Hashable {
    public var file: String?
    public var preprocessing: PreprocessingDocument
    public var labels: String?
    public var family: String?
    public var variant: String?
    public var version: VersionValue?
    public var accuracy: Double?
    public var accuracyDataset: String?
    /// SHA-256 of the model file (64 hex digits): when given, a load refuses a file that differs.
    public var sha256: String?

    enum CodingKeys: String, CodingKey {
        case file, preprocessing, labels, family, variant, version, accuracy, sha256
        case accuracyDataset = "accuracy_dataset"
    }

    /// Decodes one document, with errors that name the model and the member.
    public static func decode(_ data: Data, name: String) throws -> MetadataDocument {
        try decodeJSON(MetadataDocument.self, from: data, what: name)
    }

    /// Decodes a JSON document of type `T`; a malformed one throws a `MetadataError` that starts with
    /// `what` and names the member at fault.
    public static func decodeJSON<T: Decodable>(_ type: T.Type, from data: Data, what: String) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw MetadataError("\(what): \(describe(error))")
        }
    }

    /// The metadata of model `name` in `file`, checked.
    public func metadata(name: String, file: String) throws -> ModelMetadata {
        if let accuracy, !(accuracy >= 0 && accuracy <= 1) {
            throw MetadataError("\(name): \"accuracy\" must be a number between 0 and 1")
        }
        if let sha256, sha256.count != 64 || !sha256.allSatisfy(\.isHexDigit) {
            throw MetadataError("\(name): \"sha256\" must be 64 hex digits")
        }
        var metadata = ModelMetadata(name: name, file: file, preprocessing: try preprocessing.resolve(name: name), labelsFile: labels,
                                     family: family, variant: variant, version: version?.text ?? "1",
                                     accuracy: accuracy, accuracyDataset: accuracyDataset)
        metadata.sha256 = sha256?.lowercased()
        return metadata
    }

    /// A short reason for a decoding error: the member path and what was wrong.
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return keys.isEmpty ? "the document" : "\"\(keys.joined(separator: "."))\""
        }
        switch error {
        case .keyNotFound(let key, let context):
            let at = context.codingPath.isEmpty ? "" : " in \(path(context))"
            return "missing \"\(key.stringValue)\"\(at)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(path(context)) has the wrong type: \(context.debugDescription)"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not a JSON object" : "\(path(context)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}

/// `"version"`: a string, or an integer written as its decimal text.
public struct VersionValue: Codable, Sendable, Hashable {
    public var text: String
    public init(_ text: String) { self.text = text }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let i = try? c.decode(Int.self) {
            text = String(i)
        } else {
            text = try c.decode(String.self)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(text)
    }
}

/// `"preprocessing"`: a preset name, or an object of fields over a preset (or over 224 × 224 defaults).
public enum PreprocessingDocument: Codable, Sendable, Hashable {
    case preset(String)
    case spec(PreprocessingSpec)

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let name = try? c.decode(String.self) {
            self = .preset(name)
            return
        }
        do {
            self = .spec(try c.decode(PreprocessingSpec.self))
        } catch DecodingError.typeMismatch(_, let context) where context.codingPath.count == decoder.codingPath.count {
            throw DecodingError.typeMismatch(PreprocessingDocument.self, .init(
                codingPath: decoder.codingPath, debugDescription: "must be a preset name or an object"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .preset(let name):
            var c = encoder.singleValueContainer()
            try c.encode(name)
        case .spec(let spec):
            try spec.encode(to: encoder)
        }
    }

    /// The preprocessing this document describes, checked.
    public func resolve(name: String) throws -> Preprocessing {
        switch self {
        case .preset(let preset):
            guard let p = PreprocessingPreset.named(preset) else {
                throw MetadataError("\(name): unknown preprocessing preset \"\(preset)\" (known: \(PreprocessingPreset.names.joined(separator: ", ")))")
            }
            return p
        case .spec(let spec):
            return try spec.resolve(name: name)
        }
    }
}

/// The fields of a preprocessing object; each overrides its preset's (or the default's) value.
public struct PreprocessingSpec: Codable, Sendable, Hashable {
    public var preset: String?
    public var width: Int?
    public var height: Int?
    public var resizeShortSide: Int?
    public var crop: String?
    public var channelOrder: String?
    public var layout: String?
    public var scale: Double?
    public var mean: [Double]?
    public var std: [Double]?
    public var invert: Bool?
    public var dtype: String?

    enum CodingKeys: String, CodingKey {
        case preset, width, height, crop, layout, scale, mean, std, invert, dtype
        case resizeShortSide = "resize_short_side"
        case channelOrder = "channel_order"
    }

    func resolve(name: String) throws -> Preprocessing {
        var p: Preprocessing
        if let base = preset {
            guard let named = PreprocessingPreset.named(base) else { throw MetadataError("\(name): unknown preset \(base)") }
            p = named
        } else {
            p = Preprocessing(width: 224, height: 224)
        }
        if let width { p.width = width }
        if let height { p.height = height }
        if let resizeShortSide { p.resizeShortSide = resizeShortSide }
        if let crop {
            guard let c = CropMode(rawValue: crop) else { throw MetadataError("\(name): unknown crop mode \(crop)") }
            p.crop = c
        }
        if let channelOrder {
            guard let c = ChannelOrder(rawValue: channelOrder) else { throw MetadataError("\(name): unknown channel order \(channelOrder)") }
            p.channelOrder = c
        }
        if let layout {
            guard let l = TensorLayout(rawValue: layout) else { throw MetadataError("\(name): unknown layout \(layout)") }
            p.layout = l
        }
        if let scale { p.scale = Float(scale) }
        if let mean { p.mean = mean.map(Float.init) }
        if let std { p.std = std.map(Float.init) }
        if let invert { p.invert = invert }
        if let dtype {
            guard let d = DType(rawValue: dtype), d == .float32 || d == .float16 else { throw MetadataError("\(name): dtype must be float32 or float16") }
            p.dtype = d
        }
        guard p.width > 0, p.height > 0, p.width <= 4096, p.height <= 4096 else { throw MetadataError("\(name): bad input size") }
        guard p.mean.count == p.channels, p.std.count == p.channels, !p.std.contains(0) else {
            throw MetadataError("\(name): mean/std need \(p.channels) non-zero values")
        }
        return p
    }
}
