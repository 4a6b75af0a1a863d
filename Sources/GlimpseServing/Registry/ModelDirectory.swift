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
        for (_, original) in manifest.sorted(by: { $0.key < $1.key }) {
            var entry = original
            let file = (entry.file as NSString).lastPathComponent, twin = file + EncryptedModelFile.fileExtension
            // `glimpse models encrypt` writes `<file>.enc` beside the manifest's file: once the plain file is
            // gone, the entry serves its encrypted twin (with the plain file still there, that one loads).
            if !EncryptedModelFile.isEncrypted(file) && entries.contains(twin) {
                if entries.contains(file) {
                    issues.append(ScanIssue(file: twin, reason: "both \(file) and \(twin) present; the plain file loads"))
                } else {
                    entry.file = twin
                    entry.sha256 = nil  // the manifest's digest is the plain file's; the encrypted file is authenticated
                }
                seenFiles.insert(twin)
            }
            found.append(entry)
            seenFiles.insert((entry.file as NSString).lastPathComponent)
        }
        let modelFiles = entries.filter { $0.hasSuffix(".onnx") || EncryptedModelFile.isEncrypted($0) }
        for entry in modelFiles.sorted() where !seenFiles.contains(entry) {
            let encrypted = EncryptedModelFile.isEncrypted(entry)
            let stem = String(entry.dropLast(encrypted ? 9 : 5))
            if encrypted && entries.contains(stem + ".onnx") && !seenFiles.contains(stem + ".onnx") {
                issues.append(ScanIssue(file: entry, reason: "both \(stem).onnx and \(entry) present; the plain file loads"))
                continue
            }
            let sidecar = (directory as NSString).appendingPathComponent(stem + ".json")
            if fm.fileExists(atPath: sidecar) {
                do {
                    guard let data = fm.contents(atPath: sidecar) else { throw MetadataError("cannot read \(sidecar)") }
                    found.append(try MetadataDocument.decode(data, name: stem).metadata(name: stem, file: entry))
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
        guard let data = FileManager.default.contents(atPath: path) else {
            issues.append(ScanIssue(file: path, reason: "\(MetadataError("cannot read \(path)"))"))
            return [:]
        }
        return readManifest(data, path: path, issues: &issues)
    }

    /// The entries of a `models.json` text (`path` names it in the issues): one bad entry is an issue.
    package static func readManifest(_ data: Data, path: String, issues: inout [ScanIssue]) -> [String: ModelMetadata] {
        do {
            let manifest = try MetadataDocument.decodeJSON(ManifestDocument.self, from: data, what: "models.json")
            var out: [String: ModelMetadata] = [:]
            for (name, entry) in manifest.models {
                do {
                    let document = try entry.document.get()
                    guard let file = document.file else { throw MetadataError("entry \(name) has no \"file\"") }
                    out[name] = try document.metadata(name: name, file: (file as NSString).lastPathComponent)
                } catch let error as DecodingError {
                    issues.append(ScanIssue(file: path, reason: "entry \(name): \(MetadataDocument.describe(error))"))
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

    /// `models.json`: each entry decoded on its own, so one bad entry is reported, not fatal.
    struct ManifestDocument: Decodable {
        struct Entry: Decodable {
            let document: Result<MetadataDocument, any Error>
            init(from decoder: any Decoder) throws {
                document = Result { try MetadataDocument(from: decoder) }
            }
        }
        let models: [String: Entry]
    }
}

public struct MetadataError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
