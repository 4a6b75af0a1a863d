import Foundation

/// Everything a command line asks for, validated in one place (so the bounds are testable without the
/// executable): the base configuration, the list of modes to run (one, or a sweep), and the requests.
public struct LoadPlan: Sendable {
    public var configuration: LoadConfiguration
    public var modes: [LoadMode]
    public var corpus: RequestCorpus

    /// The request source: a folder of images (classify calls), a JSON body file, or a plain request.
    public enum Source: Sendable {
        case images(String, ClassifyOptions)
        /// Labelled images (`LabelledImages.load`: a folder of class subfolders, or a mapping file over
        /// the images of a folder), sent in an order shuffled by the seed; answers are checked.
        case labelled(labels: String, images: String?, ClassifyOptions, seed: UInt64)
        case bodyFile(String)
        case plain(method: String)
        /// Open Inference Protocol infer requests (one image each, binary data extension) over a folder of
        /// images, or over labelled images as `labelled` (its path is `/v2/models/{model}/infer`).
        case v2Images(String, ClassifyOptions, V2TensorNames)
        case v2Labelled(labels: String, images: String?, ClassifyOptions, V2TensorNames, seed: UInt64)
    }

    /// - Parameters:
    ///   - concurrency: closed-loop list (one value, or several for a sweep); ignored when `rates` is given.
    ///   - rates: open-loop list of req/s (one value, or a sweep).
    public static func make(base: LoadConfiguration, concurrency: [Int], rates: [Double], poisson: Bool,
                            source: Source, path: String) throws -> LoadPlan {
        guard path.hasPrefix("/") else { throw LoadConfigError("path must start with /, got \(path)") }
        guard concurrency.count <= 64, rates.count <= 64 else { throw LoadConfigError("a sweep has at most 64 points") }
        let modes: [LoadMode]
        if !rates.isEmpty {
            modes = rates.map { poisson ? .poisson($0) : .constantRate($0) }
        } else {
            guard !concurrency.isEmpty else { throw LoadConfigError("give --concurrency or --rate") }
            modes = concurrency.map { .closed(concurrency: $0) }
        }
        for mode in modes {
            var c = base
            c.mode = mode
            try c.validate()
        }
        let corpus: RequestCorpus
        switch source {
        case .images(let folder, let options):
            corpus = try .classify(imagesIn: URL(fileURLWithPath: folder), options: options, path: path)
        case .labelled(let labels, let images, let options, let seed):
            let items = try LabelledImages.load(labels: labels, imagesFolder: images).shuffled(seed: seed)
            corpus = try .classify(labelled: items, options: options, path: path)
        case .bodyFile(let file):
            corpus = try .bodyFile(URL(fileURLWithPath: file), path: path)
        case .plain(let method):
            guard ["GET", "HEAD", "POST", "DELETE"].contains(method) else { throw LoadConfigError("unsupported method \(method)") }
            corpus = .plain(method: method, path: path)
        case .v2Images(let folder, let options, let names):
            corpus = try .openInference(imagesIn: URL(fileURLWithPath: folder), options: options, names: names)
        case .v2Labelled(let labels, let images, let options, let names, let seed):
            let items = try LabelledImages.load(labels: labels, imagesFolder: images).shuffled(seed: seed)
            corpus = try .openInference(labelled: items, options: options, names: names)
        }
        var configuration = base
        configuration.mode = modes[0]
        return LoadPlan(configuration: configuration, modes: modes, corpus: corpus)
    }

    /// Parses "1,2,4,8" or a range "1-64" (powers of two within it) into integers.
    public static func parseIntegers(_ text: String) throws -> [Int] {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let parts = trimmed.split(separator: "-", omittingEmptySubsequences: false)
        if parts.count == 2, let lo = Int(parts[0]), let hi = Int(parts[1]) {
            guard lo >= 1, hi >= lo, hi <= 100_000 else { throw LoadConfigError("bad range \(text)") }
            var out: [Int] = []
            var v = lo
            while v < hi { out.append(v); v *= 2 }
            out.append(hi)
            return out
        }
        return try trimmed.split(separator: ",").map {
            guard let v = Int($0.trimmingCharacters(in: .whitespaces)) else { throw LoadConfigError("not an integer: \($0)") }
            return v
        }
    }

    /// Parses "100,200,500" into rates.
    public static func parseRates(_ text: String) throws -> [Double] {
        try text.split(separator: ",").map {
            guard let v = Double($0.trimmingCharacters(in: .whitespaces)), v.isFinite else { throw LoadConfigError("not a number: \($0)") }
            return v
        }
    }
}
