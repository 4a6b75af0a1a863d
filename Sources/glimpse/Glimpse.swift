import ArgumentParser
import Foundation
import GlimpseEngine

@main
struct Glimpse: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "glimpse",
        abstract: "Image classification over HTTP/2 JSON-RPC, on a SIMD CNN engine.",
        subcommands: [Serve.self, Classify.self, Models.self, Eval.self, Quantize.self, Train.self, Bench.self],
        defaultSubcommand: Serve.self
    )

    /// Checks `GLIMPSE_ISA` before any command runs: a kernel variant the CPU lacks stops here with the
    /// CPU's features named, not with an illegal instruction later.
    static func main() async {
        do {
            try EngineInfo.validateISA()
        } catch {
            FileHandle.standardError.write(Data("glimpse: \(error)\n".utf8))
            Foundation.exit(2)
        }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}

/// Options shared by the commands that load models.
struct ModelOptions: ParsableArguments {
    @Option(name: .long, help: "Folder of .onnx models with sidecar JSON or a models.json manifest.")
    var models: String = ModelOptions.defaultFolder

    @Option(name: .long, help: "Intra-op threads of the engine (default: all cores).")
    var threads: Int = ProcessInfo.processInfo.activeProcessorCount

    @OptionGroup var keys: ModelKeyOptions

    /// `models/` of the current folder, else the one beside the executable's package.
    static var defaultFolder: String {
        if FileManager.default.fileExists(atPath: "models") { return "models" }
        return "models"
    }
}
