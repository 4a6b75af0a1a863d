import ArgumentParser
import Foundation
import GlimpseModelTools
import GlimpseServing

extension Models {
    struct Pull: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Download a well-known model (with its labels and sidecar metadata) into the model folder.",
            discussion: """
                The catalog is read from --catalog, else <models>/catalog.json, else models/catalog.json, else the \
                built-in copy. Downloads resume from <file>.part and are checked against the catalog's sha256 \
                before they are moved into place.
                """)

        @Argument(help: "Model name from the catalog (see --list).") var name: String?
        @Option(name: .long, help: "Model folder to download into.") var models: String = ModelOptions.defaultFolder
        @Option(name: .long, help: "Fetch files from <URL>/<upstream file name> instead of upstream (also GLIMPSE_PULL_URL_BASE).")
        var urlBase: String?
        @Option(name: .long, help: "Catalog JSON file.") var catalog: String?
        @Flag(name: .long, help: "Download again even when a verified copy is present.") var force = false
        @Flag(name: .long, help: "List the catalog and exit.") var list = false
        @Option(name: .long, help: "Seconds without data before a download fails.") var timeout: Double = 30

        func run() async throws {
            let candidates = catalog.map { [$0] } ?? [
                (models as NSString).appendingPathComponent("catalog.json"), "models/catalog.json",
            ]
            if let catalog, !FileManager.default.fileExists(atPath: catalog) {
                throw ValidationError("no catalog file \(catalog)")
            }
            let (cat, source) = try ModelCatalog.locate(candidates: candidates)
            if list || name == nil {
                print("catalog: \(source)")
                for n in cat.names {
                    let e = cat.entries[n]!
                    let size = e.model.size.map { PullReporter.mb(Int64($0)) } ?? "?"
                    print("\(n)\t\(size)\t\(e.model.url.absoluteString)")
                }
                if name == nil && !list { throw ValidationError("name a model to pull") }
                return
            }
            guard let name, let entry = cat.entries[name] else {
                throw ValidationError("no model \"\(name ?? "")\" in the catalog (\(source)); known: \(cat.names.joined(separator: ", "))")
            }
            var base: URL?
            if let raw = urlBase ?? ProcessInfo.processInfo.environment["GLIMPSE_PULL_URL_BASE"], !raw.isEmpty {
                guard let u = URL(string: raw), u.scheme == "http" || u.scheme == "https" else {
                    throw ValidationError("--url-base must be an http(s) URL, got \(raw)")
                }
                base = u
            }
            let puller = ModelPuller(directory: models, urlBase: base, force: force,
                                     downloader: HTTPDownloader(idleTimeout: timeout))
            let reporter = PullReporter(terminal: isatty(STDERR_FILENO) == 1)
            do {
                let result = try puller.pull(entry) { reporter.handle($0) }
                reporter.finish()
                print("\(name): \(result.modelPath) ready (sidecar \(result.sidecarPath))")
            } catch let error as PullError {
                reporter.finish()
                FileHandle.standardError.write(Data("error: \(error.description)\n".utf8))
                throw ExitCode.failure
            }
        }
    }
}

/// Shows pull progress: a redrawn bar on a terminal, a log line per 10% otherwise (stderr).
final class PullReporter: @unchecked Sendable {
    let terminal: Bool
    private let lock = NSLock()
    private var lastDraw = Date.distantPast
    private var lastDecile = -1
    private var started = Date()
    private var file = ""
    private var barShown = false

    init(terminal: Bool) { self.terminal = terminal }

    func handle(_ event: ModelPuller.Event) {
        lock.lock()
        defer { lock.unlock() }
        switch event {
        case let .start(file, url, from, size):
            self.file = file
            started = Date()
            lastDecile = -1
            let sizeText = size.map { " (\(Self.mb($0)))" } ?? ""
            let resume = from > 0 ? ", resuming from \(Self.mb(from))" : ""
            line("fetching \(file)\(sizeText) from \(url.absoluteString)\(resume)")
        case let .progress(_, p):
            draw(p)
        case let .verified(file, sha, resumed):
            endBar()
            line("\(file): sha256 \(sha) verified\(resumed ? " (resumed download)" : "")")
        case let .present(file):
            line("\(file): already present, sha256 verified")
        case let .wroteSidecar(path):
            line("wrote \(path)")
        }
    }

    func finish() {
        lock.lock()
        endBar()
        lock.unlock()
    }

    private func draw(_ p: HTTPDownloader.Progress) {
        let elapsed = max(Date().timeIntervalSince(started), 1e-3)
        let rate = Double(p.bytes - p.resumedFrom) / elapsed
        let fraction = p.total.map { $0 > 0 ? Double(p.bytes) / Double($0) : 1 }
        if terminal {
            let now = Date()
            guard now.timeIntervalSince(lastDraw) > 0.1 || p.bytes == p.total else { return }
            lastDraw = now
            var text = "\r\(file) "
            if let fraction {
                let width = 30
                let filled = min(width, Int(fraction * Double(width)))
                text += "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] "
                text += String(format: "%3.0f%% ", fraction * 100)
            }
            text += "\(Self.mb(p.bytes))\(p.total.map { " / " + Self.mb($0) } ?? "") \(Self.mb(Int64(rate)))/s  "
            FileHandle.standardError.write(Data(text.utf8))
            barShown = true
        } else if let fraction {
            let decile = Int(fraction * 10)
            guard decile > lastDecile else { return }
            lastDecile = decile
            line("\(file): \(String(format: "%3.0f%%", fraction * 100)) (\(Self.mb(p.bytes)) of \(Self.mb(p.total ?? 0)), \(Self.mb(Int64(rate)))/s)")
        }
    }

    private func endBar() {
        if barShown { FileHandle.standardError.write(Data("\n".utf8)) }
        barShown = false
    }

    private func line(_ text: String) {
        endBar()
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    static func mb(_ bytes: Int64) -> String {
        bytes < 1_000_000 ? String(format: "%.1f kB", Double(bytes) / 1e3) : String(format: "%.1f MB", Double(bytes) / 1e6)
    }
}
