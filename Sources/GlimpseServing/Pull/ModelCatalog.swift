import Foundation

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
        guard let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw PullError("the catalog is not a JSON object")
        }
        var files: [String: File] = [:]
        for (name, value) in (root["files"] as? [String: Any]) ?? [:] {
            files[name] = try Self.file(name: name, value)
        }
        guard let models = root["models"] as? [String: Any] else { throw PullError("the catalog has no \"models\" object") }
        var entries: [String: Entry] = [:]
        for (name, value) in models {
            guard let object = value as? [String: Any] else { throw PullError("catalog entry \(name) is not an object") }
            let model = try Self.file(name: name + ".onnx", object)
            let needs = try ((object["files"] as? [String]) ?? []).map { file -> File in
                guard let f = files[file] else { throw PullError("catalog entry \(name) needs \(file), which the catalog's \"files\" does not list") }
                return f
            }
            guard let metadata = object["metadata"] as? [String: Any] else { throw PullError("catalog entry \(name) has no \"metadata\"") }
            _ = try ModelDirectory.metadata(name: name, file: name + ".onnx", object: metadata)
            let sidecar = try JSONSerialization.data(withJSONObject: metadata, options: [.prettyPrinted, .sortedKeys])
            entries[name] = Entry(name: name, model: model, files: needs, sidecar: sidecar)
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

    private static func file(name: String, _ value: Any) throws -> File {
        guard let object = value as? [String: Any] else { throw PullError("catalog file \(name) is not an object") }
        guard let urlString = object["url"] as? String, let url = URL(string: urlString), url.scheme != nil else {
            throw PullError("catalog file \(name) has no valid \"url\"")
        }
        guard let sha = object["sha256"] as? String, sha.count == 64, sha.allSatisfy(\.isHexDigit) else {
            throw PullError("catalog file \(name) has no valid \"sha256\" (64 hex digits)")
        }
        return File(name: name, url: url, sha256: sha, size: object["size"] as? Int)
    }
}
