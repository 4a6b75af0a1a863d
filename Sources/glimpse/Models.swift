import ArgumentParser
import Foundation
import GlimpseServing

struct Models: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Manage models.", subcommands: [List.self, Pull.self, Keygen.self, Encrypt.self, Decrypt.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Load the model folder and list what loads, with input specs.")
        @OptionGroup var modelOptions: ModelOptions

        func run() async throws {
            var serving = ServingConfiguration(engineThreads: 1)
            serving.modelKeys = try modelOptions.keys.keyring()
            let service = InferenceService(configuration: serving)
            defer { service.shutdown() }
            let problems = service.registry.loadDirectory(modelOptions.models)
            for m in service.registry.all {
                let input = m.model.inputs.first.map { "\($0.name) \($0.shape) \($0.dtype.rawValue)" } ?? "-"
                let p = m.metadata.preprocessing
                print("\(m.name)\tfamily=\(m.metadata.family) variant=\(m.metadata.variant) v\(m.metadata.version)\tinput \(input)\t\(p.width)x\(p.height) \(p.channelOrder.rawValue) crop=\(p.crop.rawValue)\tlabels=\(m.labels.count)\t\(m.fileBytes) bytes")
            }
            for problem in problems { print("not loaded: \(problem)") }
            if service.registry.all.isEmpty { print("no models loaded from \(modelOptions.models)") }
        }
    }
}
