import ArgumentParser
import Foundation
import GlimpseImage
import GlimpseServing

struct Classify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Classify an image file without a server and print the top predictions.")

    @Argument(help: "JPEG or PNG file.") var image: String
    @Option(help: "A model name, or a family whose most accurate variant classifies (see `glimpse models list`).") var model: String = "imagenet"
    @Option(help: "How many predictions to print.") var topK: Int = 5
    @Option(help: "center, fit or fill (default: the model's).") var crop: String?
    @Option(help: DCTScaling.optionHelp) var jpegDctScaling: String = "powers-of-two"
    @OptionGroup var modelOptions: ModelOptions

    func run() async throws {
        guard let data = FileManager.default.contents(atPath: image) else {
            throw ValidationError("cannot read \(image)")
        }
        var cropMode: CropMode?
        if let crop {
            guard let c = CropMode(rawValue: crop) else { throw ValidationError("crop must be center, fit or fill") }
            cropMode = c
        }
        let options = DecodeOptions(dctScaling: try DCTScaling(option: jpegDctScaling))
        var serving = ServingConfiguration(engineThreads: modelOptions.threads, decodeOptions: options)
        serving.modelKeys = try modelOptions.keys.keyring()
        let service = InferenceService(configuration: serving)
        defer { service.shutdown() }
        let (found, _) = ModelDirectory.scan(modelOptions.models)
        let family = found.filter { $0.family == model }
        guard let metadata = found.first(where: { $0.name == model }) ?? family.max(by: { ($0.accuracy ?? -1) < ($1.accuracy ?? -1) }) else {
            let families = Set(found.map(\.family)).sorted().joined(separator: ", ")
            throw ValidationError("no model or family \"\(model)\" in \(modelOptions.models); models: \(found.map(\.name).joined(separator: ", ")); families: \(families)")
        }
        try service.registry.load(metadata, directory: modelOptions.models)
        let results = try await service.classify(ClassifyRequest(images: [[UInt8](data)], model: metadata.name, topK: topK, crop: cropMode))
        let r = results[0]
        print("\(image): \(r.image.format) \(r.image.width)x\(r.image.height), model \(metadata.name)")
        for (rank, p) in r.predictions.enumerated() {
            print(String(format: "%2d. %-32@ index %4d  score %.5f", rank + 1, p.label as NSString, p.index, p.score))
        }
        print(String(format: "decode %.2f ms, inference %.2f ms, total %.2f ms", r.timing.decode, r.timing.inference, r.timing.total))
    }
}
