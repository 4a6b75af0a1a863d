import ArgumentParser
import Foundation
import GlimpseImage
import GlimpseModelTools
import GlimpseTraining

struct Train: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Train a classifier from a folder of labelled photos, on the features of a base model.",
        discussion: """
            DATA holds one subfolder per class (the folder name is the label) of JPEG or PNG images of any \
            size, or is a tar of such folders. The base model (e.g. mobilenetv2-12-int8) runs with Glimpse's \
            engine up to its pooled feature vector, with its own decode and preprocessing; a softmax head \
            (L2-regularized multinomial logistic regression, L-BFGS, early stopping on held-out images) is \
            trained on those features. The output is a standard ONNX file (the base up to its features, then \
            Gemm and Softmax) with a sidecar <name>.json and <name>.labels.txt beside it, so a server \
            serving that folder picks it up with models.load.
            """)

    @Argument(help: "Training images: a folder of class subfolders, or a tar of them.") var data: String
    @Option(help: "Base model name (see `glimpse models list`).") var base: String
    @Option(help: "Output ONNX file; its sidecar metadata and labels are written beside it.") var out: String
    @Option(help: "Family of the new model (default: the output file's name).") var family: String?
    @Option(help: "Share of each class held out for early stopping and the report, when --validation-dir is not given.")
    var validation: Double = 0.1
    @Option(help: "Labelled images to validate on instead of a held-out share.") var validationDir: String?
    @Option(help: "Use only the first N images of each class.") var perClassLimit: Int?
    @Option(help: "Augmentation, repeatable: 'mirror' adds the horizontal mirror image of each training image, 'zoom' a second, tighter crop (and its mirror with both).")
    var augment: [String] = []
    @Option(help: "L2 strengths to try, comma-separated; the best on the validation images wins.") var l2: String = "0.1,0.03,0.01,0.003,0.001"
    @Option(help: "Most L-BFGS iterations per L2 strength.") var maxIterations: Int = 300
    @Option(help: "Stop after this many iterations without a better validation accuracy.") var patience: Int = 30
    @Flag(help: "Weigh every image alike instead of balancing the classes.") var noClassWeights = false
    @Option(help: "Units of a hidden layer (ReLU) before the softmax; 0 trains a linear head. A hidden layer is trained by Adam with a cosine schedule.")
    var hidden: Int = 0
    @Option(help: "With --hidden: most epochs (early stopping on the validation images ends sooner).") var epochs: Int = 60
    @Option(help: "With --hidden: Adam's initial learning rate.") var learningRate: Float = 1e-3
    @Option(help: "With --hidden: weight decay (L2 on the gradient).") var weightDecay: Float = 1e-4
    @Option(help: "Take the features from this float tensor of the base instead of its classifier's input.") var featureTensor: String?
    @Option(help: "Crop mode (center, fit or fill) instead of the base's; the new model's metadata records it, so serving preprocesses alike. Default: 'fill' (stretch, keeping all of the image) when most images are smaller than the base's input, as CIFAR-10's are; else the base's mode.")
    var crop: String?
    @Option(help: "Images per engine run while extracting features.") var batch: Int = 16
    @OptionGroup var modelOptions: ModelOptions

    func run() async throws {
        let start = Date()
        let candidates = l2.split(separator: ",").compactMap { Float($0.trimmingCharacters(in: .whitespaces)) }
        guard !candidates.isEmpty, candidates.allSatisfy({ $0 >= 0 }) else { throw ValidationError("--l2 takes non-negative numbers, comma-separated") }
        guard validation >= 0, validation < 1 else { throw ValidationError("--validation must be in [0, 1)") }
        guard let augmentation = Augmentation(names: augment.flatMap { $0.split(separator: ",").map(String.init) }) else {
            throw ValidationError("--augment takes mirror and zoom")
        }
        guard batch >= 1, batch <= 1024, maxIterations >= 1, patience >= 1 else { throw ValidationError("--batch, --max-iterations and --patience must be positive") }
        let keyring = try modelOptions.keys.keyring()
        let (baseBytes, metadata, baseKey) = try BaseModel.read(named: base, directory: modelOptions.models, keyring: keyring)
        var preprocessing = metadata.preprocessing
        if let crop {
            guard let mode = CropMode(rawValue: crop) else { throw ValidationError("--crop must be center, fit or fill") }
            preprocessing.crop = mode
        }
        var samples = try EvalDataset.load(data).samples
        if let perClassLimit { samples = BaseModel.firstPerLabel(samples, limit: max(1, perClassLimit)) }
        if crop == nil, let chosen = TrainingCrop.choose(for: samples, input: preprocessing) {
            preprocessing.crop = chosen
            print("crop: \(chosen.rawValue) (most images are smaller than the base's \(preprocessing.width)×\(preprocessing.height) input; --crop overrides)")
        }
        let held = try validationDir.map { try EvalDataset.load($0).samples }
        print("training on \(data): \(samples.count) images, \(HeadTrainer.classes(of: samples).count) classes; base \(base)")

        var options = HeadTrainer.Options()
        options.validationFraction = validation
        options.augmentation = augmentation
        options.batch = batch
        options.threads = max(1, modelOptions.threads)
        options.featureTensor = featureTensor
        options.training.l2 = candidates
        options.training.maxIterations = maxIterations
        options.training.patience = patience
        options.training.balanceClasses = !noClassWeights
        guard hidden >= 0, hidden <= 8192, epochs >= 1, learningRate > 0, weightDecay >= 0 else {
            throw ValidationError("--hidden must be 0...8192, --epochs and --learning-rate positive, --weight-decay not negative")
        }
        options.training.hidden = hidden
        options.training.mlp.epochs = epochs
        options.training.mlp.learningRate = learningRate
        options.training.mlp.weightDecay = weightDecay
        options.training.mlp.patience = patience
        let progress = TrainingProgress()
        let outcome = try HeadTrainer(options: options).train(samples: samples, validation: held, base: baseBytes, baseName: base,
                                                              preprocessing: preprocessing) { progress.show($0) }
        progress.finish()
        print("features: \(outcome.features) values from \(outcome.featurePath)")
        print(String(format: "extracted %ld training and %ld validation images%@ in %.1f s; trained in %.1f s",
                     outcome.trainImages, outcome.validationImages, augmentation.isEmpty ? "" : " (and \(augment.joined(separator: ", ")) views of the training images)",
                     outcome.extractSeconds, outcome.trainSeconds))
        if hidden > 0 {
            print("hidden layer of \(hidden) units: \(outcome.result.iterations) epochs, best at epoch \(outcome.result.bestIteration)")
        }
        let tried = outcome.result.candidates.map { c in "\(c.l2): " + (c.accuracy.map { String(format: "%.2f%%", $0 * 100) } ?? "-") }
        print("L2 strengths (validation accuracy): \(tried.joined(separator: ", ")); chose \(outcome.result.l2), best at iteration \(outcome.result.bestIteration)")
        print(String(format: "training accuracy %.2f%%", outcome.result.trainAccuracy * 100))
        if let report = outcome.report {
            print(String(format: "validation accuracy %.2f%% (%ld/%ld)", report.accuracy * 100, report.correct, report.total))
            print(report.formatted)
        }
        if !outcome.failures.isEmpty { print("skipped, could not decode: \(outcome.failures.joined(separator: "; "))") }
        let stem = ((out as NSString).lastPathComponent as NSString).deletingPathExtension
        let written = try TrainedModelFiles.write(outcome, to: out, family: family ?? stem, preprocessing: preprocessing,
                                                  accuracyDataset: validationDir.map { "validation images of \($0)" },
                                                  sealWith: baseKey, keyring: keyring)
        if let baseKey { print("the base model is encrypted, so the new model is too, with the same key (id \(baseKey))") }
        print("wrote \(written.joined(separator: ", "))")
        print(String(format: "total %.1f s", Date().timeIntervalSince(start)))
    }
}

/// A progress bar on stderr while features are extracted, then one line per training step
/// (only when stderr is a terminal; otherwise a line per phase).
final class TrainingProgress: @unchecked Sendable {
    private let terminal = isatty(STDERR_FILENO) == 1
    private var started = Date()
    private var phase = ""

    func show(_ event: HeadTrainer.Event) {
        switch event {
        case let .extracting(done, total, what):
            if phase != what { newPhase(what) }
            guard terminal else { return }
            let width = 30, filled = total > 0 ? width * done / total : width
            let rate = Double(done) / max(1e-3, Date().timeIntervalSince(started))
            write("\rextracting \(what) features [\(String(repeating: "#", count: filled))\(String(repeating: "-", count: width - filled))] \(done)/\(total) \(Int(rate)) img/s")
        case let .step(p):
            let name = p.loss.isNaN ? "training, hidden layer" : "training, L2 \(p.l2) (\(p.candidate)/\(p.candidates))"
            if phase != name { newPhase(name) }
            let accuracy = p.validationAccuracy.map { String(format: " validation %.2f%%", $0 * 100) } ?? ""
            let line = p.loss.isNaN ? String(format: "epoch %3ld%@", p.iteration, accuracy)
                : String(format: "L2 %g (%ld/%ld) iteration %3ld loss %.4f%@", p.l2, p.candidate, p.candidates, p.iteration, p.loss, accuracy)
            if terminal { write("\r" + line + "   ") }
        }
    }

    func finish() { if terminal && !phase.isEmpty { write("\n") } }

    private func newPhase(_ name: String) {
        if terminal && !phase.isEmpty { write("\n") }
        if !terminal { write("\(name)…\n") }
        phase = name
        started = Date()
    }

    private func write(_ s: String) { FileHandle.standardError.write(Data(s.utf8)) }
}
