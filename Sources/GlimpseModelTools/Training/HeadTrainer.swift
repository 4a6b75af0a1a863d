import Foundation
import GlimpseImage
import GlimpseQuantize
import GlimpseTensor
import GlimpseTraining

/// `glimpse train`: a new classifier on a base model's features, from labelled images. Features are
/// extracted once by the engine (the base cut at its pooled feature vector), the head is trained
/// in Swift (`HeadTraining`), and the result is the base graph with a `Gemm` + `Softmax` head.
public struct HeadTrainer {
    public struct Options: Sendable {
        /// Share of the images held out for early stopping and the report when no validation set is given.
        public var validationFraction = 0.1
        /// Extra views of the training images, added as more training examples.
        public var augmentation: Augmentation = []
        public var batch = 16
        public var threads = 1
        public var featureTensor: String?
        public var seed: UInt64 = 1
        public var training = HeadTraining.Options()
        public init() {}
    }

    public struct Outcome: Sendable {
        public var model: [UInt8]
        public var labels: [String]
        public var result: HeadTraining.Result
        /// On the validation images (nil when there were none).
        public var report: ClassificationReport?
        public var trainImages: Int
        /// Training examples: the images and their augmented views.
        public var trainExamples: Int
        public var validationImages: Int
        public var features: Int
        public var featurePath: String
        public var extractSeconds: Double
        public var trainSeconds: Double
        public var failures: [String]
    }

    /// What the trainer says as it goes: extraction progress, then one line per training step.
    public enum Event: Sendable {
        case extracting(done: Int, total: Int, what: String)
        case step(HeadTraining.Progress)
    }

    public let options: Options
    public init(options: Options) { self.options = options }

    /// The classes of a data set: its labels, sorted.
    public static func classes(of samples: [EvalSample]) -> [String] { Array(Set(samples.map(\.label))).sorted() }

    /// Trains on `samples` (held-out `validation`, or a seeded stratified split of the samples).
    public func train(samples: [EvalSample], validation: [EvalSample]?, base: [UInt8], baseName: String,
                      preprocessing: Preprocessing, events: (Event) -> Void = { _ in }) throws -> Outcome {
        let labels = Self.classes(of: samples)
        guard labels.count >= 2 else { throw DatasetError("training needs at least two classes (subfolders); found \(labels.count)") }
        let index = Dictionary(uniqueKeysWithValues: labels.enumerated().map { ($1, $0) })
        let indexed = samples.map { ($0, index[$0.label] ?? 0) }
        let (train, heldSplit) = validation == nil ? split(indexed, classes: labels.count) : (indexed, [])
        var held = heldSplit
        if let validation {
            let unknown = Set(validation.map(\.label)).subtracting(labels)
            guard unknown.isEmpty else { throw DatasetError("validation labels not in the training set: \(unknown.sorted().joined(separator: ", "))") }
            held = validation.map { ($0, index[$0.label] ?? 0) }
        }
        let extractor = try FeatureExtractor(base: base, name: baseName, preprocessing: preprocessing, threads: options.threads,
                                             batch: options.batch, featureTensor: options.featureTensor)
        let start = Date()
        let trainSet = try extractor.extract(train, augmentation: options.augmentation) { events(.extracting(done: $0, total: $1, what: "training")) }
        let heldSet = try extractor.extract(held) { events(.extracting(done: $0, total: $1, what: "validation")) }
        let extractSeconds = Date().timeIntervalSince(start)
        guard trainSet.matrix.rows > 0 else {
            throw DatasetError("no training image could be decoded: \(trainSet.failures.joined(separator: "; "))")
        }
        let trainStart = Date()
        var training = options.training
        training.threads = options.threads
        let result = HeadTraining.train(trainSet.matrix, validation: heldSet.matrix.rows > 0 ? heldSet.matrix : nil,
                                        classes: labels.count, options: training) { events(.step($0)) }
        let trainSeconds = Date().timeIntervalSince(trainStart)
        var report: ClassificationReport?
        if heldSet.matrix.rows > 0 {
            report = ClassificationReport(labels: labels, truth: heldSet.matrix.labels, predicted: HeadTraining.predict(result, heldSet.matrix))
        }
        var head = ClassifierGraft.Head(classes: labels.count, features: extractor.features, weights: result.weights, bias: result.bias)
        if let hidden = result.hiddenLayer {
            head.hidden = ClassifierGraft.Layer(units: hidden.bias.count, weights: hidden.weights, bias: hidden.bias)
        }
        let note = "head trained by glimpse train on \(trainSet.matrix.rows) examples over \(labels.count) classes; base \(baseName); features \(extractor.graft.featurePath); L2 \(result.l2)"
        let model = try extractor.graft.model(head: head, metadata: [("glimpse.training", note), ("glimpse.labels", labels.joined(separator: "\n"))])
        return Outcome(model: model, labels: labels, result: result, report: report, trainImages: train.count, trainExamples: trainSet.matrix.rows, validationImages: held.count,
                       features: extractor.features, featurePath: extractor.graft.featurePath, extractSeconds: extractSeconds,
                       trainSeconds: trainSeconds, failures: trainSet.failures + heldSet.failures)
    }

    private var rng: SplitMix64 { SplitMix64(seed: options.seed) }

    /// A stratified split: `validationFraction` of each class (at least one image of a class with
    /// two or more) is held out, chosen by the seeded generator.
    func split(_ samples: [(EvalSample, Int)], classes: Int) -> (train: [(EvalSample, Int)], held: [(EvalSample, Int)]) {
        guard options.validationFraction > 0 else { return (samples, []) }
        var generator = rng
        var train: [(EvalSample, Int)] = [], held: [(EvalSample, Int)] = []
        for k in 0..<classes {
            var members = samples.filter { $0.1 == k }
            members.shuffle(using: &generator)
            let count = members.count < 2 ? 0 : max(1, Int((Double(members.count) * options.validationFraction).rounded()))
            held += members.prefix(count)
            train += members.dropFirst(count)
        }
        return (train, held)
    }
}
