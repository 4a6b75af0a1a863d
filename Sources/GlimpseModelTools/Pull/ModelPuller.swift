import Foundation

/// Fetches a catalog entry into a model folder: each file goes to `<file>.part` (resumed when it is
/// there), is checked against its sha256, and only then is renamed into place. The model's sidecar
/// `<name>.json` is written last, so the folder never describes a model whose file is missing.
public struct ModelPuller: Sendable {
    public enum Event: Sendable {
        /// A download begins; `resumingFrom` > 0 when a `.part` is being continued.
        case start(file: String, url: URL, resumingFrom: Int64, expectedSize: Int64?)
        case progress(file: String, HTTPDownloader.Progress)
        /// The file is complete and its sha256 matches.
        case verified(file: String, sha256: String, resumed: Bool)
        /// The file was already there with the right sha256.
        case present(file: String)
        case wroteSidecar(path: String)
    }

    public var directory: String
    /// Fetch every file from `<urlBase>/<file name of its url>` instead of its upstream URL.
    public var urlBase: URL?
    /// Download again even when a verified copy is present; drop any `.part`.
    public var force: Bool
    public var downloader: HTTPDownloader

    public init(directory: String, urlBase: URL? = nil, force: Bool = false, downloader: HTTPDownloader = HTTPDownloader()) {
        self.directory = directory
        self.urlBase = urlBase
        self.force = force
        self.downloader = downloader
    }

    public struct Result: Sendable {
        public var modelPath: String
        public var sidecarPath: String
        public var downloaded: [String]
    }

    /// Pulls the entry's files and writes its sidecar. Throws `PullError`.
    @discardableResult
    public func pull(_ entry: ModelCatalog.Entry, events: @escaping @Sendable (Event) -> Void = { _ in }) throws -> Result {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw PullError("cannot create the model folder \(directory): \(error.localizedDescription)")
        }
        var downloaded: [String] = []
        for file in entry.files {
            if try fetch(file, as: file.name, events: events) { downloaded.append(file.name) }
        }
        let modelFile = entry.name + ".onnx"
        if try fetch(entry.model, as: modelFile, events: events) { downloaded.append(modelFile) }
        let sidecar = path(entry.name + ".json")
        if force || !FileManager.default.fileExists(atPath: sidecar) {
            do {
                try entry.sidecar.write(to: URL(fileURLWithPath: sidecar), options: .atomic)
            } catch {
                throw PullError("cannot write \(sidecar): \(error.localizedDescription)")
            }
            events(.wroteSidecar(path: sidecar))
        }
        return Result(modelPath: path(modelFile), sidecarPath: sidecar, downloaded: downloaded)
    }

    /// The URL a file is fetched from.
    public func source(of file: ModelCatalog.File) -> URL {
        guard let urlBase else { return file.url }
        return urlBase.appendingPathComponent(file.url.lastPathComponent)
    }

    private func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    /// Returns false when a verified copy was already in place.
    private func fetch(_ file: ModelCatalog.File, as name: String, events: @escaping @Sendable (Event) -> Void) throws -> Bool {
        let target = path(name)
        let part = target + ".part"
        let fm = FileManager.default
        if force {
            try? fm.removeItem(atPath: part)
        } else if fm.fileExists(atPath: target), (try? SHA256.hex(ofFile: target)) == file.sha256 {
            events(.present(file: name))
            return false
        }
        let url = source(of: file)
        let existing = Int64((try? fm.attributesOfItem(atPath: part)[.size] as? Int) ?? 0)
        events(.start(file: name, url: url, resumingFrom: existing, expectedSize: file.size.map(Int64.init)))
        let outcome = try downloader.download(url, to: part, expectedSize: file.size.map(Int64.init)) { p in
            events(.progress(file: name, p))
        }
        let actual = try SHA256.hex(ofFile: part)
        guard actual == file.sha256 else {
            try? fm.removeItem(atPath: part)
            try? fm.removeItem(atPath: target)
            throw PullError("""
                checksum mismatch for \(name) from \(url): expected sha256 \(file.sha256), got \(actual) \
                (\(outcome.bytes) bytes); the download was deleted
                """)
        }
        guard rename(part, target) == 0 else {
            throw PullError("cannot move \(part) to \(target): \(String(cString: strerror(errno)))")
        }
        events(.verified(file: name, sha256: actual, resumed: outcome.resumedFrom > 0))
        return true
    }
}
