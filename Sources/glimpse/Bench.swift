import ArgumentParser
import Foundation
import GlimpseModelTools
import GlimpseServing
import Logging

struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure the loaded models: latency at batch 1, img/s at the best batch size, joules per image.",
        discussion: """
            glimpse bench --models loads every model of the model folder the way `serve` does and prints, \
            per model, its manifest accuracy and file size beside the median latency of a batch of one, \
            the throughput at the best of --batches (a model with a fixed batch size uses its own) and the \
            energy per image: RAPL package energy over the runs where /sys/class/powercap is readable, \
            otherwise an estimate, CPU time of the engine threads x --watts-per-core (the source is printed). \
            Inputs are synthetic (no decoding); the engine runs one batch at a time on --threads threads. \
            --write-manifest records latency_ms and the per-batch figures in the folder's models.json.
            """)

    @Flag(name: .customLong("models"), help: "Print the model table of the loaded models.") var modelTable = false
    @Option(name: .customLong("model-dir"), help: "Folder of .onnx models with sidecar JSON or a models.json manifest.")
    var modelDir: String = ModelOptions.defaultFolder
    @OptionGroup var keys: ModelKeyOptions
    @Option(help: "Intra-op threads of the engine (default: all cores, as serve).") var threads: Int = ProcessInfo.processInfo.activeProcessorCount
    @Option(help: "Seconds of runs per model and batch size.") var seconds: Double = 1
    @Option(help: "Comma-separated batch sizes for models with a free batch dimension.") var batches: String = "1,8,32"
    @Option(help: "Only these models (comma-separated names).") var only: String?
    @Option(help: "Watts attributed to one busy core when RAPL is not readable (energy estimate).") var wattsPerCore: Double = 4
    @Option(help: "Also write the results as JSON to this file.") var json: String?
    @Flag(help: "Write each measured model's latency_ms (batch 1 median) and per-batch figures into <model-dir>/models.json.")
    var writeManifest = false

    func validate() throws {
        guard modelTable else { throw ValidationError("say what to measure: --models (the model table)") }
        guard seconds > 0, seconds <= 600 else { throw ValidationError("--seconds must be in (0, 600]") }
        guard threads >= 1 else { throw ValidationError("--threads must be at least 1") }
        guard wattsPerCore > 0 else { throw ValidationError("--watts-per-core must be above 0") }
        _ = try batchSizes()
    }

    func batchSizes() throws -> [Int] {
        let sizes = batches.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !sizes.isEmpty, sizes.allSatisfy({ ($0 ?? 0) >= 1 && ($0 ?? 0) <= 1024 }) else {
            throw ValidationError("--batches takes batch sizes from 1 to 1024, e.g. 1,8,32")
        }
        return sizes.compactMap { $0 }
    }

    func run() async throws {
        let energy = EnergyMeter(wattsPerCore: wattsPerCore)
        var logger = Logger(label: "glimpse.bench")
        logger.logLevel = .warning
        var serving = ServingConfiguration(engineThreads: threads, workersPerModel: 1)
        serving.modelKeys = try keys.keyring()
        let service = InferenceService(configuration: serving, energy: energy, logger: logger)
        defer { service.shutdown() }
        let problems = service.registry.loadDirectory(modelDir)
        for problem in problems { FileHandle.standardError.write(Data("not loaded: \(problem)\n".utf8)) }
        var models = service.registry.all
        if let only {
            let wanted = Set(only.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            let unknown = wanted.subtracting(models.map(\.name))
            guard unknown.isEmpty else { throw ValidationError("not loaded from \(modelDir): \(unknown.sorted().joined(separator: ", "))") }
            models = models.filter { wanted.contains($0.name) }
        }
        guard !models.isEmpty else { throw ValidationError("no models loaded from \(modelDir)") }
        // The manifest's order (family, then variant by accuracy), not the registry's alphabetical one.
        models.sort { a, b in
            a.metadata.family != b.metadata.family ? a.metadata.family < b.metadata.family
                : (a.metadata.accuracy ?? -1) != (b.metadata.accuracy ?? -1) ? (a.metadata.accuracy ?? -1) > (b.metadata.accuracy ?? -1) : a.name < b.name
        }
        let options = ModelBenchmark.Options(secondsPerPoint: seconds, batchSizes: try batchSizes())
        let loadBefore = MachineDescription.loadAverage()
        let terminal = isatty(STDERR_FILENO) == 1
        var rows: [ModelBenchmark.Row] = []
        for model in models {
            if terminal { FileHandle.standardError.write(Data("\rmeasuring \(model.name)...\u{1B}[K".utf8)) }
            rows.append(try ModelBenchmark.run(model, options: options, energy: energy, engineThreads: threads))
        }
        if terminal { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        let machine = MachineDescription.current(threads: threads)
        print("\(machine); \(String(format: "%g", seconds)) s per point; load average before: \(loadBefore), after: \(MachineDescription.loadAverage())")
        print()
        print(ModelBenchmark.markdownTable(rows))
        print(ModelBenchmark.batchTable(rows))
        if let json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(["machine": AnyEncodable(machine), "models": AnyEncodable(rows)]).write(to: URL(fileURLWithPath: json))
        }
        if writeManifest {
            let path = (modelDir as NSString).appendingPathComponent("models.json")
            guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("no \(path) to write to") }
            let command = "glimpse bench --models --seconds \(String(format: "%g", seconds)) --batches \(batches) --threads \(threads) --write-manifest"
            let text = try ModelBenchmark.updateManifest(data, rows: rows, command: command, machine: machine)
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            print("wrote latency_ms of \(rows.count) models into \(path)")
        }
    }
}

/// What the figures were measured on: CPU model, cores, engine threads.
enum MachineDescription {
    static func current(threads: Int) -> String {
        var cpu = "unknown CPU"
        if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
           let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
           let name = line.split(separator: ":", maxSplits: 1).last {
            cpu = name.trimmingCharacters(in: .whitespaces)
        }
        return "\(cpu), \(ProcessInfo.processInfo.activeProcessorCount) cores, \(threads) engine threads"
    }

    static func loadAverage() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "unknown" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }
}

/// Encodes any Encodable (for a heterogeneous top-level JSON object).
struct AnyEncodable: Encodable {
    let value: any Encodable
    init(_ value: any Encodable) { self.value = value }
    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}
