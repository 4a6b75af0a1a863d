import Dispatch
import Foundation
import GlimpseEngine
import GlimpseImage
import GlimpseONNX
import GlimpseTensor

/// Compares a quantized variant with its float32 model on a folder of photos, both run by Glimpse's
/// engine with the same preprocessing: file size, top-1 agreement, softmax differences, load time
/// and batch-1 latency.
public struct QuantizationReport: Sendable {
    /// Size and timings of one model file.
    public struct Measurement: Sendable {
        public var path: String
        public var fileBytes: Int
        /// Median wall time of `ONNXLoader.load` (read, import, optimize, plan batch 1).
        public var loadMilliseconds: Double
        /// Mean wall time of one batch-1 `run` (preprocessing excluded).
        public var meanLatencyMilliseconds: Double
    }

    /// Mode label for the table (e.g. "int8-kmeans (8-bit)").
    public var mode: String
    public var reference: Measurement
    public var variant: Measurement
    /// Images compared (decoded and run by both models).
    public var imageCount: Int
    /// Images whose top-1 class is the same for both models.
    public var top1Matches: Int
    /// Largest |p_fp32 − p_variant| over every class of every image, after softmax.
    public var maxAbsSoftmaxDiff: Float
    /// Largest max|y_fp32 − y_variant| / max|y_fp32| over images, on the raw outputs (logits). Still
    /// meaningful where softmax is flat, e.g. for models with random weights.
    public var maxRelativeOutputDiff: Float
    /// Images whose top-1 differs: "file: fp32 class → variant class".
    public var disagreements: [String]
    /// Files that could not be used, with the reason (undecodable, unsupported format).
    public var skipped: [String]

    public var top1Agreement: Double { imageCount > 0 ? Double(top1Matches) / Double(imageCount) : 0 }
    /// Fraction of the float32 file size saved by the variant.
    public var sizeReduction: Double { 1 - Double(variant.fileBytes) / Double(max(1, reference.fileBytes)) }

    /// Loads both models (`loadRepeats` times each, alternating), preprocesses every JPEG/PNG in
    /// `imagesDirectory` with `preprocessing`, runs each image through both models `rounds` times
    /// (alternating, after one warm-up run each) and compares the outputs.
    public static func measure(reference referencePath: String, variant variantPath: String, mode: String,
                               imagesDirectory: String, preprocessing: Preprocessing, threads: Int = 1,
                               loadRepeats: Int = 3, rounds: Int = 3) throws -> QuantizationReport {
        let options = EngineOptions(threads: threads)
        func fileSize(_ p: String) throws -> Int {
            guard let attrs = try? FileManager.default.attributesOfItem(atPath: p), let n = attrs[.size] as? NSNumber else {
                throw QuantizationError(.io, "cannot read model file \(p)")
            }
            return n.intValue
        }
        var loadTimes: [[Double]] = [[], []]
        var models: [CompiledModel] = []
        for _ in 0..<max(1, loadRepeats) {
            models = []
            for (k, p) in [referencePath, variantPath].enumerated() {
                let t0 = DispatchTime.now().uptimeNanoseconds
                do {
                    models.append(try ONNXLoader.load(path: p, options: options))
                } catch {
                    throw QuantizationError(.verificationFailed, "cannot load \(p): \(error)")
                }
                loadTimes[k].append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            }
        }
        let (inputs, skipped) = try preprocessImages(imagesDirectory, spec: preprocessing, model: models[0])
        guard !inputs.isEmpty else {
            throw QuantizationError(.invalidArgument, "no usable JPEG or PNG images in \(imagesDirectory)\(skipped.isEmpty ? "" : ": " + skipped.joined(separator: "; "))")
        }

        var latency: [Double] = [0, 0]
        var runs = 0
        var outputs: [[[Float]]] = [[], []]
        var relative: Float = 0
        for k in 0..<2 { _ = try models[k].run([inputs[0].tensor]) }   // warm-up
        for round in 0..<max(1, rounds) {
            for item in inputs {
                for k in 0..<2 {
                    let t0 = DispatchTime.now().uptimeNanoseconds
                    let out = try models[k].run([item.tensor])
                    latency[k] += Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6
                    if round == 0 { outputs[k].append(out[0].floats()) }
                }
                if round == 0 {
                    let a = outputs[0][outputs[0].count - 1], b = outputs[1][outputs[1].count - 1]
                    var d: Float = 0, m: Float = 0
                    for j in a.indices { d = max(d, abs(a[j] - b[j])); m = max(m, abs(a[j])) }
                    relative = max(relative, m > 0 ? d / m : d)
                    outputs[0][outputs[0].count - 1] = probabilities(a)
                    outputs[1][outputs[1].count - 1] = probabilities(b)
                }
                runs += 1
            }
        }

        var matches = 0
        var maxDiff: Float = 0
        var disagreements: [String] = []
        for (i, item) in inputs.enumerated() {
            let a = outputs[0][i], b = outputs[1][i]
            let ta = argmax(a), tb = argmax(b)
            if ta == tb { matches += 1 } else { disagreements.append("\(item.file): \(ta) → \(tb)") }
            for j in a.indices { maxDiff = max(maxDiff, abs(a[j] - b[j])) }
        }
        func median(_ v: [Double]) -> Double { let s = v.sorted(); return s[s.count / 2] }
        return QuantizationReport(
            mode: mode,
            reference: Measurement(path: referencePath, fileBytes: try fileSize(referencePath),
                                   loadMilliseconds: median(loadTimes[0]), meanLatencyMilliseconds: latency[0] / Double(runs)),
            variant: Measurement(path: variantPath, fileBytes: try fileSize(variantPath),
                                 loadMilliseconds: median(loadTimes[1]), meanLatencyMilliseconds: latency[1] / Double(runs)),
            imageCount: inputs.count, top1Matches: matches, maxAbsSoftmaxDiff: maxDiff, maxRelativeOutputDiff: relative,
            disagreements: disagreements, skipped: skipped)
    }

    /// A fixed-width table: one float32 row (the reference of the first report), then one row per report.
    public static func table(_ reports: [QuantizationReport]) -> String {
        guard let first = reports.first else { return "" }
        func pad(_ s: String, _ n: Int, left: Bool = false) -> String {
            s.count >= n ? s : (left ? s + String(repeating: " ", count: n - s.count) : String(repeating: " ", count: n - s.count) + s)
        }
        let header = [pad("mode", 31, left: true), pad("size (bytes)", 13), pad("vs fp32", 8), pad("top-1 agree", 17),
                      pad("max |dsoftmax|", 15), pad("rel |dlogit|", 13), pad("load ms fp32/var", 18), pad("b1 ms fp32/var", 16)].joined(separator: " ")
        var lines = [header, String(repeating: "-", count: header.count)]
        lines.append([pad("fp32", 31, left: true), pad("\(first.reference.fileBytes)", 13), pad("-", 8), pad("-", 17), pad("-", 15), pad("-", 13),
                      pad(String(format: "%.1f", first.reference.loadMilliseconds), 18),
                      pad(String(format: "%.2f", first.reference.meanLatencyMilliseconds), 16)].joined(separator: " "))
        for r in reports {
            lines.append([
                pad(r.mode, 31, left: true),
                pad("\(r.variant.fileBytes)", 13),
                pad(String(format: "-%.1f%%", r.sizeReduction * 100), 8),
                pad(String(format: "%.1f%% (%d/%d)", r.top1Agreement * 100, r.top1Matches, r.imageCount), 17),
                pad(String(format: "%.2e", r.maxAbsSoftmaxDiff), 15),
                pad(String(format: "%.2e", r.maxRelativeOutputDiff), 13),
                pad(String(format: "%.1f / %.1f", r.reference.loadMilliseconds, r.variant.loadMilliseconds), 18),
                pad(String(format: "%.2f / %.2f", r.reference.meanLatencyMilliseconds, r.variant.meanLatencyMilliseconds), 16),
            ].joined(separator: " "))
        }
        return lines.joined(separator: "\n")
    }

    // MARK: - Helpers

    struct PreparedImage {
        var file: String
        var tensor: Tensor
    }

    /// Every .jpg/.jpeg/.png file of `directory` (sorted by name), preprocessed into a batch-1 input.
    static func preprocessImages(_ directory: String, spec: Preprocessing, model: CompiledModel) throws -> ([PreparedImage], [String]) {
        guard let input = model.inputs.first else { throw QuantizationError(.invalidArgument, "\(model.name) has no inputs") }
        let dims = spec.layout == .nhwc ? [1, spec.height, spec.width, spec.channels] : [1, spec.channels, spec.height, spec.width]
        let expected = input.shape.enumerated().map { $0.offset == 0 && $0.element == -1 ? 1 : $0.element }
        guard expected == dims, input.dtype == spec.dtype else {
            throw QuantizationError(.invalidArgument, "preprocessing produces \(spec.dtype.rawValue)\(dims), but \(model.name) expects \(input.dtype.rawValue)\(input.shape) for '\(input.name)'; pick the model's preprocessing preset")
        }
        let files: [String]
        do {
            files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        } catch {
            throw QuantizationError(.io, "cannot list images in \(directory): \(error.localizedDescription)")
        }
        var prepared: [PreparedImage] = []
        var skipped: [String] = []
        for f in files {
            let ext = (f as NSString).pathExtension.lowercased()
            guard ["jpg", "jpeg", "png"].contains(ext) else {
                if !f.hasPrefix(".") { skipped.append("\(f): not JPEG or PNG") }
                continue
            }
            let path = (directory as NSString).appendingPathComponent(f)
            guard let data = FileManager.default.contents(atPath: path) else {
                skipped.append("\(f): unreadable")
                continue
            }
            let t = Tensor(shape: Shape(dims), dtype: spec.dtype)
            do {
                _ = try data.withUnsafeBytes { try ImagePipeline.preprocess($0, spec: spec, into: t.rawPointer) }
                prepared.append(PreparedImage(file: f, tensor: t))
            } catch {
                skipped.append("\(f): \(error)")
            }
        }
        return (prepared, skipped)
    }

    /// Softmax of `logits`, unless they already are probabilities (all in [0, 1], summing to 1).
    static func probabilities(_ v: [Float]) -> [Float] {
        let sum = v.reduce(0, +)
        if v.allSatisfy({ $0 >= 0 && $0 <= 1 }) && abs(sum - 1) < 1e-3 { return v }
        let m = v.max() ?? 0
        let e = v.map { Foundation.exp($0 - m) }
        let s = e.reduce(0, +)
        return e.map { $0 / s }
    }

    static func argmax(_ v: [Float]) -> Int {
        var best = 0
        for i in v.indices where v[i] > v[best] { best = i }
        return best
    }
}
