import Foundation
import GlimpseServing

/// The models `glimpse models pull` knows: where each file lives upstream, its size and sha256, and
/// the sidecar metadata written next to it. Read from a JSON file (`models/catalog.json` in the
/// repository), with `ModelCatalog.builtIn` as the fallback.
public struct ModelCatalog: Sendable {
    /// One downloadable file.
    public struct File: Sendable, Hashable {
        public var name: String
        public var url: URL
        public var sha256: String
        public var size: Int?

        public init(name: String, url: URL, sha256: String, size: Int? = nil) {
            self.name = name
            self.url = url
            self.sha256 = sha256.lowercased()
            self.size = size
        }
    }

    public struct Entry: Sendable {
        public var name: String
        /// The `.onnx` file; it is saved as `<name>.onnx`.
        public var model: File
        /// Extra files the model needs (labels), saved under their own names.
        public var files: [File]
        /// The sidecar `<name>.json`, as written.
        public var sidecar: Data
    }

    public var entries: [String: Entry]

    public var names: [String] { entries.keys.sorted() }

    public init(entries: [String: Entry]) { self.entries = entries }

    /// Parses a catalog document; every entry's metadata must be valid sidecar metadata.
    public init(json data: Data) throws {
        let document: CatalogDocument
        do {
            document = try MetadataDocument.decodeJSON(CatalogDocument.self, from: data, what: "the catalog is not valid")
            for (name, entry) in document.models { _ = try entry.metadata.metadata(name: name, file: name + ".onnx") }
        } catch let error as MetadataError {
            throw PullError(error.description)
        }
        var files: [String: File] = [:]
        for (name, file) in document.files ?? [:] {
            files[name] = try file.checked(name: name)
        }
        var entries: [String: Entry] = [:]
        for (name, entry) in document.models {
            let model = try entry.download.checked(name: name + ".onnx")
            let needs = try (entry.files ?? []).map { file -> File in
                guard let f = files[file] else { throw PullError("catalog entry \(name) needs \(file), which the catalog's \"files\" does not list") }
                return f
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            // The sidecar carries the model file's checksum, so every later load verifies the file.
            var metadata = entry.metadata
            metadata.sha256 = model.sha256
            entries[name] = Entry(name: name, model: model, files: needs, sidecar: try encoder.encode(metadata))
        }
        self.entries = entries
    }

    /// Reads a catalog file.
    public init(contentsOf path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else { throw PullError("cannot read the catalog \(path)") }
        do {
            try self.init(json: data)
        } catch let error as PullError {
            throw PullError("\(path): \(error.description)")
        }
    }

    /// The first catalog file that exists among `candidates`, else the built-in table.
    public static func locate(candidates: [String]) throws -> (catalog: ModelCatalog, source: String) {
        for path in candidates where FileManager.default.fileExists(atPath: path) {
            return (try ModelCatalog(contentsOf: path), path)
        }
        return (try ModelCatalog(json: Data(builtInJSON.utf8)), "built-in catalog")
    }

    public static var builtIn: ModelCatalog {
        get throws { try ModelCatalog(json: Data(builtInJSON.utf8)) }
    }
}

/// The catalog file as written: downloadable files by name, and models with their download and metadata.
struct CatalogDocument: Decodable {
    struct Download: Decodable {
        var url: String
        var sha256: String
        var size: Int?

        func checked(name: String) throws -> ModelCatalog.File {
            guard let url = URL(string: url), url.scheme != nil else {
                throw PullError("catalog file \(name) has no valid \"url\"")
            }
            guard sha256.count == 64, sha256.allSatisfy(\.isHexDigit) else {
                throw PullError("catalog file \(name) has no valid \"sha256\" (64 hex digits)")
            }
            return ModelCatalog.File(name: name, url: url, sha256: sha256, size: size)
        }
    }

    struct Model: Decodable {
        var download: Download
        var files: [String]?
        var metadata: MetadataDocument

        enum CodingKeys: String, CodingKey { case files, metadata }

        init(from decoder: any Decoder) throws {
            download = try Download(from: decoder)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            files = try c.decodeIfPresent([String].self, forKey: .files)
            metadata = try c.decode(MetadataDocument.self, forKey: .metadata)
        }
    }

    var files: [String: Download]?
    var models: [String: Model]
}
