import Dispatch
import GlimpseEngine
import GlimpseImage
import GlimpseONNX
import GlimpseQuantize
import GlimpseTensor
import GlimpseTraining

/// Runs a base model up to its pooled feature vector (`ClassifierGraft.featureTensor`) on labelled
/// images: the serving decode and preprocessing on all cores, the engine in batches on all cores.
public final class FeatureExtractor: @unchecked Sendable {
    public let graft: ClassifierGraft
    public let model: CompiledModel
    public let preprocessing: Preprocessing
    /// Length of the feature vector.
    public let features: Int
    let batch: Int

    /// `bytes` is the base model's ONNX file; `featureTensor` overrides where the features are taken.
    public init(base bytes: [UInt8], name: String, preprocessing: Preprocessing, threads: Int, batch: Int = 16,
                featureTensor: String? = nil) throws {
        graft = try ClassifierGraft(base: bytes, name: name, featureTensor: featureTensor)
        // The head is cut off before planning, so a placeholder of one feature is enough here.
        let probe = try graft.model(head: .zero(classes: 1, features: 1))
        model = try ONNXLoader.load(bytes: probe, name: name, options: EngineOptions(threads: threads, widenFixedBatch: true),
                                    outputs: [ClassifierGraft.featureTensor])
        self.preprocessing = preprocessing
        guard let input = model.inputs.first, model.inputs.count == 1 else {
            throw DatasetError("\(name): a base model for training needs exactly one input")
        }
        let itemBytes = input.shape.dropFirst().reduce(1, *) * input.dtype.byteSize
        guard itemBytes == preprocessing.byteCount else {
            throw DatasetError("\(name): preprocessing makes \(preprocessing.byteCount) bytes but the model input \(input.shape) needs \(itemBytes)")
        }
        let fixed = input.shape.first.flatMap { $0 > 0 ? $0 : nil }
        self.batch = fixed ?? max(1, batch)
        let out = try model.run([Tensor(shape: Shape([fixed ?? 1] + Array(input.shape.dropFirst())), dtype: input.dtype)])[0]
        features = out.shape.dims.dropFirst().reduce(1, *)
        guard features >= 1 else { throw DatasetError("\(name): the feature tensor is empty (\(out.shape))") }
    }

    /// Features of `samples` (with their label indices), and of the extra views `augmentation` asks
    /// for (each a training example of its own). Samples that fail to decode are skipped and
    /// reported. `progress` gets (done, total).
    public func extract(_ samples: [(EvalSample, Int)], augmentation: Augmentation = [],
                        progress: (Int, Int) -> Void = { _, _ in }) throws -> (matrix: FeatureMatrix, failures: [String]) {
        var matrix = FeatureMatrix(columns: features)
        var failures: [String] = []
        guard let input = model.inputs.first else { return (matrix, failures) }
        let crops = augmentation.contains(.zoom) ? [preprocessing, Augmentation.zoomed(preprocessing)] : [preprocessing]
        let mirrored = augmentation.contains(.mirror)
        let views = crops.count * (mirrored ? 2 : 1)
        let itemShape = Array(input.shape.dropFirst())
        let itemBytes = preprocessing.byteCount
        let fixed = input.shape.first.flatMap { $0 > 0 ? $0 : nil }
        if let fixed, fixed < views {
            throw DatasetError("the base model keeps a fixed batch of \(fixed), and the augmentation needs \(views) items per image; train without --augment")
        }
        let perCall = max(1, (fixed ?? batch) / views) // images per engine run (each view is an item)
        var done = 0
        while done < samples.count {
            let chunk = Array(samples[done..<min(samples.count, done + perCall)])
            let tensor = Tensor(shape: Shape([fixed ?? chunk.count * views] + itemShape), dtype: input.dtype)
            let errors = ErrorSlots(count: chunk.count)
            DispatchQueue.concurrentPerform(iterations: chunk.count) { i in
                do {
                    var at = tensor.rawPointer + i * views * itemBytes
                    for spec in crops {
                        try Evaluator.preprocess(chunk[i].0, spec: spec, into: at)
                        if mirrored {
                            Mirror.copyFlipped(at, into: at + itemBytes, spec: spec)
                            at += itemBytes
                        }
                        at += itemBytes
                    }
                } catch {
                    errors.set(i, "\(chunk[i].0.source): \(error)")
                }
            }
            let output = try model.run([tensor])[0]
            for (i, (_, label)) in chunk.enumerated() {
                if let message = errors.get(i) {
                    if failures.count < 5 { failures.append(message) }
                    continue
                }
                for v in 0..<views { matrix.append(output.item(i * views + v).floats(), label: label) }
            }
            done += chunk.count
            progress(done, samples.count)
        }
        return (matrix, failures)
    }
}

/// Extra views of each training image, each one more training example (the validation images are
/// never augmented).
public struct Augmentation: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// The horizontal mirror image.
    public static let mirror = Augmentation(rawValue: 1)
    /// A second, tighter crop: the short side resized to 1.15× the input, then the centre cut out.
    public static let zoom = Augmentation(rawValue: 2)

    /// `--augment` names: mirror, zoom.
    public init?(names: [String]) {
        var a: Augmentation = []
        for name in names {
            switch name {
            case "mirror": a.insert(.mirror)
            case "zoom", "crop": a.insert(.zoom)
            default: return nil
            }
        }
        self = a
    }

    static func zoomed(_ spec: Preprocessing) -> Preprocessing {
        var z = spec
        z.crop = .center
        z.resizeShortSide = Int((Double(max(spec.width, spec.height)) * 1.15).rounded())
        return z
    }
}

/// Horizontal mirror images of preprocessed inputs (augmentation).
enum Mirror {
    /// Writes the mirror image of the preprocessed item at `source` to `destination`.
    static func copyFlipped(_ source: UnsafeMutableRawPointer, into destination: UnsafeMutableRawPointer, spec: Preprocessing) {
        let size = spec.dtype.byteSize
        let (w, h, c) = (spec.width, spec.height, spec.channels)
        // Bytes of one pixel in a row, and the rows (with their planes) to reverse.
        let pixel = spec.layout == .nchw ? size : size * c
        let rows = spec.layout == .nchw ? h * c : h
        for r in 0..<rows {
            let from = source + r * w * pixel, to = destination + r * w * pixel
            for x in 0..<w { (to + (w - 1 - x) * pixel).copyMemory(from: from + x * pixel, byteCount: pixel) }
        }
    }
}
