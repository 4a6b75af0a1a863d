import Foundation
import GlimpseImage
import GlimpseTensor

/// Finds the models in a folder and their metadata (sidecar JSON or a `models.json` manifest).
public enum ModelDirectory {
    public struct ScanIssue: Sendable, CustomStringConvertible {
        public var file: String
        public var reason: String
        public var description: String { "\(file): \(reason)" }
    }

    /// Lists the models of `directory`. Files that cannot be described are reported, not fatal.
    public static func scan(_ directory: String) -> (models: [ModelMetadata], issues: [ScanIssue]) {
        let fm = FileManager.default
        var issues: [ScanIssue] = []
        guard let entries = try? fm.contentsOfDirectory(atPath: directory) else {
            return ([], [ScanIssue(file: directory, reason: "cannot read the model folder")])
        }
        let manifest = readManifest(directory: directory, issues: &issues)
        var found: [ModelMetadata] = []
        var seenFiles = Set<String>()
        for (name, entry) in manifest.sorted(by: { $0.key < $1.key }) {
            found.append(entry)
            seenFiles.insert((entry.file as NSString).lastPathComponent)
            _ = name
        }
        for entry in entries.sorted() where entry.hasSuffix(".onnx") && !seenFiles.contains(entry) {
            let stem = String(entry.dropLast(5))
            let sidecar = (directory as NSString).appendingPathComponent(stem + ".json")
            if fm.fileExists(atPath: sidecar) {
                do {
                    let object = try readJSONObject(sidecar)
                    found.append(try metadata(name: stem, file: entry, object: object))
                } catch {
                    issues.append(ScanIssue(file: sidecar, reason: "\(error)"))
                }
            } else {
                issues.append(ScanIssue(file: entry, reason: "no metadata (\(stem).json sidecar or models.json entry); skipped"))
            }
        }
        return (found, issues)
    }

    static func readManifest(directory: String, issues: inout [ScanIssue]) -> [String: ModelMetadata] {
        let path = (directory as NSString).appendingPathComponent("models.json")
        guard FileManager.default.fileExists(atPath: path) else { return [:] }
        do {
            let root = try readJSONObject(path)
            guard let models = root["models"] as? [String: Any] else {
                throw MetadataError("models.json has no \"models\" object")
            }
            var out: [String: ModelMetadata] = [:]
            for (name, value) in models {
                guard let object = value as? [String: Any] else {
                    issues.append(ScanIssue(file: path, reason: "entry \(name) is not an object"))
                    continue
                }
                do {
                    guard let file = object["file"] as? String else { throw MetadataError("entry \(name) has no \"file\"") }
                    out[name] = try metadata(name: name, file: (file as NSString).lastPathComponent, object: object)
                } catch {
                    issues.append(ScanIssue(file: path, reason: "\(error)"))
                }
            }
            return out
        } catch {
            issues.append(ScanIssue(file: path, reason: "\(error)"))
            return [:]
        }
    }

    static func readJSONObject(_ path: String) throws -> [String: Any] {
        guard let data = FileManager.default.contents(atPath: path) else { throw MetadataError("cannot read \(path)") }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw MetadataError("\((path as NSString).lastPathComponent) is not a JSON object")
        }
        return object
    }

    /// Builds metadata from a sidecar or manifest entry.
    public static func metadata(name: String, file: String, object: [String: Any]) throws -> ModelMetadata {
        let preprocessing: Preprocessing
        switch object["preprocessing"] {
        case let preset as String:
            guard let p = PreprocessingPreset.named(preset) else {
                throw MetadataError("\(name): unknown preprocessing preset \"\(preset)\" (known: \(PreprocessingPreset.names.joined(separator: ", ")))")
            }
            preprocessing = p
        case let spec as [String: Any]:
            preprocessing = try parsePreprocessing(spec, name: name)
        default:
            throw MetadataError("\(name): \"preprocessing\" must be a preset name or an object")
        }
        return ModelMetadata(
            name: name, file: file, preprocessing: preprocessing,
            labelsFile: object["labels"] as? String,
            family: object["family"] as? String,
            variant: object["variant"] as? String,
            version: (object["version"] as? String) ?? (object["version"] as? Int).map(String.init) ?? "1",
            accuracy: try accuracy(object["accuracy"], name: name),
            accuracyDataset: object["accuracy_dataset"] as? String)
    }

    static func accuracy(_ value: Any?, name: String) throws -> Double? {
        guard let value, !(value is NSNull) else { return nil }
        guard let a = (value as? Double) ?? (value as? Int).map(Double.init), a >= 0, a <= 1 else {
            throw MetadataError("\(name): \"accuracy\" must be a number between 0 and 1")
        }
        return a
    }

    static func parsePreprocessing(_ o: [String: Any], name: String) throws -> Preprocessing {
        var p: Preprocessing
        if let base = o["preset"] as? String {
            guard let preset = PreprocessingPreset.named(base) else { throw MetadataError("\(name): unknown preset \(base)") }
            p = preset
        } else {
            p = Preprocessing(width: 224, height: 224)
        }
        if let v = o["width"] as? Int { p.width = v }
        if let v = o["height"] as? Int { p.height = v }
        if let v = o["resize_short_side"] as? Int { p.resizeShortSide = v }
        if let v = o["crop"] as? String {
            guard let c = CropMode(rawValue: v) else { throw MetadataError("\(name): unknown crop mode \(v)") }
            p.crop = c
        }
        if let v = o["channel_order"] as? String {
            guard let c = ChannelOrder(rawValue: v) else { throw MetadataError("\(name): unknown channel order \(v)") }
            p.channelOrder = c
        }
        if let v = o["layout"] as? String {
            guard let l = TensorLayout(rawValue: v) else { throw MetadataError("\(name): unknown layout \(v)") }
            p.layout = l
        }
        if let v = o["scale"] as? Double { p.scale = Float(v) }
        if let v = o["mean"] as? [Double] { p.mean = v.map(Float.init) }
        if let v = o["std"] as? [Double] { p.std = v.map(Float.init) }
        if let v = o["invert"] as? Bool { p.invert = v }
        if let v = o["dtype"] as? String {
            guard let d = DType(rawValue: v), d == .float32 || d == .float16 else { throw MetadataError("\(name): dtype must be float32 or float16") }
            p.dtype = d
        }
        guard p.width > 0, p.height > 0, p.width <= 4096, p.height <= 4096 else { throw MetadataError("\(name): bad input size") }
        guard p.mean.count == p.channels, p.std.count == p.channels, !p.std.contains(0) else {
            throw MetadataError("\(name): mean/std need \(p.channels) non-zero values")
        }
        return p
    }
}

public struct MetadataError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
