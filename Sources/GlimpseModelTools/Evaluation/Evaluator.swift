import Foundation
import GlimpseImage
import GlimpseServing
import GlimpseTensor

/// Accuracy of a loaded model on labelled samples, through the classify path: decode (or raw
/// pixels) → the model's preprocessing → the engine, in batches.
public enum Evaluator {
    public struct Report: Sendable {
        public var evaluated = 0
        public var top1 = 0
        public var top5 = 0
        /// Samples whose label is not one of the model's, by label.
        public var unmappedLabels: [String: Int] = [:]
        /// Samples that could not be decoded, with the first few reasons.
        public var failed = 0
        public var failures: [String] = []
        /// Wall time of preprocessing plus inference.
        public var seconds = 0.0
        public var batch = 1

        public var top1Accuracy: Double { evaluated > 0 ? Double(top1) / Double(evaluated) : 0 }
        public var top5Accuracy: Double { evaluated > 0 ? Double(top5) / Double(evaluated) : 0 }
        public var imagesPerSecond: Double { seconds > 0 ? Double(evaluated + failed) / seconds : 0 }
    }

    /// Maps a data set label to a class index: the model's label list by name (case-insensitive,
    /// `_` and spaces alike), else the number itself when the label is digits and the model has no
    /// label of that name.
    public static func labelIndex(_ label: String, labels: [String], classes: Int) -> Int? {
        let key = normalize(label)
        if let i = labels.firstIndex(where: { normalize($0) == key }) { return i }
        if let n = Int(label), n >= 0, n < classes, labels.isEmpty || labels.allSatisfy({ Int($0) != nil }) { return n }
        return nil
    }

    static func normalize(_ s: String) -> String {
        s.lowercased().replacingOccurrences(of: "_", with: " ").trimmingCharacters(in: .whitespaces)
    }

    /// Runs the model on every sample. `batch` is clamped to the model's fixed batch size when its
    /// input has one. `progress` gets (done, total) after each batch.
    public static func run(model: LoadedModel, samples: [EvalSample], batch: Int = 8,
                           progress: (Int, Int) -> Void = { _, _ in }) throws -> Report {
        guard let input = model.model.inputs.first else { throw DatasetError("model \(model.name) has no inputs") }
        let itemShape = Array(input.shape.dropFirst())
        let spec = model.metadata.preprocessing
        let itemBytes = itemShape.reduce(1, *) * input.dtype.byteSize
        guard itemBytes == spec.byteCount else {
            throw DatasetError("model \(model.name): preprocessing makes \(spec.byteCount) bytes but the model input \(input.shape) needs \(itemBytes)")
        }
        let fixedBatch = input.shape.first.flatMap { $0 > 0 ? $0 : nil }
        let batchSize = fixedBatch ?? max(1, batch)
        let classes = model.model.outputs.first.map { $0.shape.dropFirst().reduce(1) { $0 * max(1, $1) } } ?? 0

        var report = Report()
        report.batch = batchSize
        var mapped: [(EvalSample, Int)] = []
        for s in samples {
            if let i = labelIndex(s.label, labels: model.labels, classes: classes) {
                mapped.append((s, i))
            } else {
                report.unmappedLabels[s.label, default: 0] += 1
            }
        }
        if mapped.isEmpty && !samples.isEmpty {
            let some = report.unmappedLabels.keys.sorted().prefix(5).joined(separator: ", ")
            let known = model.labels.prefix(5).joined(separator: ", ")
            throw DatasetError("no label of the data set (\(some)…) is a label of model \(model.name) (\(known)…)")
        }

        let start = DispatchTime.now().uptimeNanoseconds
        var done = 0
        while done < mapped.count {
            let chunk = Array(mapped[done..<min(mapped.count, done + batchSize)])
            let n = fixedBatch ?? chunk.count
            let tensor = Tensor(shape: Shape([n] + itemShape), dtype: input.dtype)
            let errors = ErrorSlots(count: chunk.count)
            DispatchQueue.concurrentPerform(iterations: chunk.count) { i in
                do {
                    // Each item writes its own slice of the batch tensor.
                    try preprocess(chunk[i].0, spec: spec, into: tensor.rawPointer + i * itemBytes)
                } catch {
                    errors.set(i, "\(chunk[i].0.source): \(error)")
                }
            }
            let output = try model.model.run([tensor])[0]
            for (i, (sample, truth)) in chunk.enumerated() {
                _ = sample
                if let message = errors.get(i) {
                    report.failed += 1
                    if report.failures.count < 5 { report.failures.append(message) }
                    continue
                }
                let top = topIndices(output.item(i).floats(), k: 5)
                report.evaluated += 1
                if top.first == truth { report.top1 += 1 }
                if top.contains(truth) { report.top5 += 1 }
            }
            done += chunk.count
            progress(done, mapped.count)
        }
        report.seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return report
    }

    /// The k highest raw scores, best first (ties by lower index). Ranking raw scores, not softmax
    /// probabilities, keeps classes apart whose probabilities underflow to the same 0.
    static func topIndices(_ scores: [Float], k: Int) -> [Int] {
        var best: [Int] = []
        for i in scores.indices where !scores[i].isNaN {
            guard best.count < k || scores[i] > scores[best[best.count - 1]] else { continue }
            var at = best.count
            while at > 0 && scores[best[at - 1]] < scores[i] { at -= 1 }
            best.insert(i, at: at)
            if best.count > k { best.removeLast() }
        }
        return best
    }

    /// Decodes (or takes the pixels of) one sample and preprocesses it into `destination`.
    public static func preprocess(_ sample: EvalSample, spec: Preprocessing, into destination: UnsafeMutableRawPointer) throws {
        switch sample.image {
        case .encoded(let bytes):
            _ = try bytes.withUnsafeBytes { try ImagePipeline.preprocess($0, spec: spec, into: destination) }
        case let .pixels(pixels, width, height, channels):
            try pixels.withUnsafeBytes {
                try ImagePipeline.preprocess(pixels: $0, width: width, height: height, channels: channels, spec: spec, into: destination)
            }
        }
    }
}

/// Per-item error messages written from concurrent preprocessing.
final class ErrorSlots: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [String?]
    init(count: Int) { slots = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ message: String) { lock.lock(); slots[i] = message; lock.unlock() }
    func get(_ i: Int) -> String? { lock.lock(); defer { lock.unlock() }; return slots[i] }
}
