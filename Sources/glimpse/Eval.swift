import ArgumentParser
import Foundation
import GlimpseModelTools
import GlimpseServing

struct Eval: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure a model's top-1 and top-5 accuracy on a labelled data set, with Glimpse's own decode, preprocessing and engine.",
        discussion: """
            DATA is a folder of labelled images (one subfolder per label, or files named <label>_*.jpg / \
            <label>-*.png), an IDX image file such as t10k-images-idx3-ubyte.gz (its labels file is found \
            beside it, or give --labels), or a tar of images in <label>/ folders (gzip allowed). Labels match \
            the model's label list by name, case-insensitively, or by index when they are numbers.
            """)

    @Argument(help: "Data set: folder, IDX image file or tar archive.") var data: String
    @Option(help: "Model name (see `glimpse models list`).") var model: String
    @Option(help: "IDX label file, when it is not beside the image file.") var labels: String?
    @Option(help: "Evaluate only the first N images.") var limit: Int?
    @Option(help: "Images per engine run (models with a fixed batch size use theirs).") var batch: Int = 8
    @OptionGroup var modelOptions: ModelOptions

    func run() async throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        guard batch >= 1, batch <= 1024 else { throw ValidationError("--batch must be between 1 and 1024") }
        var serving = ServingConfiguration(engineThreads: modelOptions.threads)
        serving.modelKeys = try modelOptions.keys.keyring()
        let service = InferenceService(configuration: serving)
        defer { service.shutdown() }
        let (found, _) = ModelDirectory.scan(modelOptions.models)
        guard let metadata = found.first(where: { $0.name == model }) else {
            throw ValidationError("no model \"\(model)\" in \(modelOptions.models); available: \(found.map(\.name).joined(separator: ", "))")
        }
        let loaded = try service.registry.load(metadata, directory: modelOptions.models)
        let readStart = Date()
        let (kind, samples) = try EvalDataset.load(data, labels: labels, limit: limit)
        let readSeconds = Date().timeIntervalSince(readStart)
        guard !samples.isEmpty else { throw ValidationError("\(data): no labelled images found") }
        let labelSet = Set(samples.map(\.label))
        print("model \(model), data \(data) (\(kind.rawValue), \(samples.count) images, \(labelSet.count) labels, read in \(String(format: "%.2f", readSeconds)) s)")
        let terminal = isatty(STDERR_FILENO) == 1
        let report = try Evaluator.run(model: loaded, samples: samples, batch: batch) { done, total in
            if terminal { FileHandle.standardError.write(Data("\r\(done)/\(total)".utf8)) }
        }
        if terminal { FileHandle.standardError.write(Data("\r".utf8)) }
        print(String(format: "top-1 %.2f%% (%ld/%ld)  top-5 %.2f%% (%ld/%ld)", report.top1Accuracy * 100, report.top1, report.evaluated,
                     report.top5Accuracy * 100, report.top5, report.evaluated))
        print(String(format: "%ld images in %.2f s: %.1f images/s (decode + preprocess + inference; batch %ld, %ld engine threads)",
                     report.evaluated + report.failed, report.seconds, report.imagesPerSecond, report.batch, modelOptions.threads))
        if !report.unmappedLabels.isEmpty {
            let list = report.unmappedLabels.sorted { $0.key < $1.key }.map { "\($0.key) (\($0.value))" }.joined(separator: ", ")
            print("skipped, label not known to the model: \(list)")
        }
        if report.failed > 0 {
            print("\(report.failed) images failed to decode, e.g.: \(report.failures.joined(separator: "; "))")
        }
    }
}
