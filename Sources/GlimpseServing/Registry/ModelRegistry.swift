import Crypto
import Foundation
import GlimpseEngine
import GlimpseONNX
import Logging

/// The models the server can run, by name.
public final class ModelRegistry: @unchecked Sendable {
    private let lock = NSLock()
    private var models: [String: LoadedModel] = [:]
    let configuration: ServingConfiguration
    let logger: Logger
    let metrics: ServingMetrics
    /// Batches running across the models: a batch uses all engine threads only when alone, and while
    /// batches rarely overlap.
    let occupancy: EngineOccupancy

    init(configuration: ServingConfiguration, logger: Logger, metrics: ServingMetrics) {
        self.configuration = configuration
        self.occupancy = EngineOccupancy(maxOverlap: configuration.parallelMaxOverlap)
        self.logger = logger
        self.metrics = metrics
    }

    public var all: [LoadedModel] {
        lock.lock()
        defer { lock.unlock() }
        return models.values.sorted { $0.name < $1.name }
    }

    public func model(named name: String) -> LoadedModel? {
        lock.lock()
        defer { lock.unlock() }
        return models[name]
    }

    /// Loads one model; on failure the registry is unchanged and the error says why.
    @discardableResult
    public func load(_ metadata: ModelMetadata, directory: String) throws -> LoadedModel {
        do {
            let loaded = try loadUnrecorded(metadata, directory: directory)
            metrics.modelLoad(model: metadata.name, outcome: "loaded")
            return loaded
        } catch {
            metrics.modelLoad(model: metadata.name, outcome: "failed")
            throw error
        }
    }

    /// Refuses a model file whose SHA-256 differs from the one its metadata gives.
    static func verify(_ bytes: [UInt8], sha256 expected: String, metadata: ModelMetadata) throws {
        let actual = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
        guard actual == expected else {
            throw ServingError.modelUnavailable(
                "model \(metadata.name): \(metadata.file) does not match the sha256 in its metadata "
                + "(expected \(expected), got \(actual)); the file is damaged or was replaced")
        }
    }

    private func loadUnrecorded(_ metadata: ModelMetadata, directory: String) throws -> LoadedModel {
        let path = (directory as NSString).appendingPathComponent(metadata.file)
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: (path as NSString).resolvingSymlinksInPath) else {
            throw ServingError.modelUnavailable("model file \(metadata.file) not found")
        }
        // The budget left once the other models are counted bounds the load itself, so a file that
        // folds or packs huge weights is refused before they are allocated (checked again below).
        let others = configuration.memoryBudgetBytes.map { _ in
            all.filter { $0.name != metadata.name }.reduce(0) { $0 + $1.memory.totalBytes }
        }
        let options = EngineOptions(threads: configuration.engineThreads, widenFixedBatch: true,
                                    weightBudgetBytes: configuration.memoryBudgetBytes.map { max(0, $0 - (others ?? 0)) })
        let compiled: CompiledModel
        do {
            if EncryptedModelFile.isEncrypted(path) {
                // Decrypted in memory only: no plaintext copy is ever written.
                let bytes = try EncryptedModelFile.open(path: path, keyring: configuration.modelKeys)
                compiled = try ONNXLoader.load(bytes: bytes, name: EncryptedModelFile.boundName(forPath: path), options: options)
            } else {
                compiled = try ONNXLoader.load(path: path, options: options, verify: metadata.sha256.map { expected in
                    { bytes in try Self.verify(bytes, sha256: expected, metadata: metadata) }
                })
            }
        } catch let refused as WeightBudgetExceeded {
            throw ServingError.modelUnavailable(
                "model \(metadata.name) needs at least \(WeightBudgetExceeded.mib(refused.neededBytes)) for its weights "
                + "and the loaded models hold \(WeightBudgetExceeded.mib(others ?? 0)): over the --memory-budget of "
                + "\(WeightBudgetExceeded.mib(configuration.memoryBudgetBytes ?? 0)) (refused before its weights were packed)")
        }
        // Which quantized nodes run in int8 and which stayed in fp32 (and why).
        for note in compiled.loadNotes {
            logger.info("engine: \(note)", metadata: ["model": "\(metadata.name)"])
        }
        guard let output = compiled.outputs.first else { throw EngineError("model \(metadata.name) has no outputs") }
        let classes = output.shape.dropFirst().reduce(1) { $0 * max(1, $1) }
        let labels = LabelLoader.load(metadata: metadata, directory: directory, classes: classes)
        let name = metadata.name
        let variant = metadata.variant
        let metrics = self.metrics
        let recordBatch = metrics.batchRecorder(model: name, variant: variant)
        let queue = try BatchQueue(model: compiled, configuration: configuration.batching, workers: configuration.workersPerModel,
                                   metrics: metrics, occupancy: occupancy) { cost in
            recordBatch(cost.size, cost.oldestWaitNanos)
        }
        // A new version serves only once it has run: warm-up and latency calibration happen here,
        // while the old version (if any) keeps serving.
        do {
            try queue.calibrate()
        } catch {
            queue.shutdown()
            throw ServingError.modelUnavailable("model \(metadata.name) failed its warm-up run: \(error)")
        }
        let loaded = LoadedModel(metadata: metadata, model: compiled, labels: labels,
                                 fileBytes: (attributes[.size] as? Int) ?? 0, queue: queue,
                                 recorded: ModelMetrics(model: name, family: metadata.family, variant: variant, metrics: metrics))
        do {
            try checkMemoryBudget(for: loaded)
        } catch {
            queue.shutdown()
            throw error
        }
        lock.lock()
        let old = models.updateValue(loaded, forKey: metadata.name)
        lock.unlock()
        if let old {
            old.queue.shutdown()
            trimWhenReleased(old)
        }
        return loaded
    }

    /// Refuses a model that would take the loaded models over `memoryBudgetBytes` (the version it
    /// replaces, if any, is not counted: it is freed once its last request ends).
    private func checkMemoryBudget(for loaded: LoadedModel) throws {
        guard let budget = configuration.memoryBudgetBytes else { return }
        let others = all.filter { $0.name != loaded.name }.reduce(0) { $0 + $1.memory.totalBytes }
        let needed = loaded.memory
        guard others + needed.totalBytes > budget else { return }
        func mib(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
        throw ServingError.modelUnavailable(
            "model \(loaded.name) needs \(mib(needed.totalBytes)) (weights \(mib(needed.weightBytes)), plans \(mib(needed.planBytes))) "
            + "and the loaded models hold \(mib(others)): over the --memory-budget of \(mib(budget))")
    }

    /// Loads every described model of a folder. Returns what failed, by file; never throws.
    public func loadDirectory(_ directory: String) -> [String] {
        let (found, issues) = ModelDirectory.scan(directory)
        var problems = issues.map(\.description)
        for metadata in found {
            do {
                let loaded = try load(metadata, directory: directory)
                logger.info("loaded model", metadata: ["model": "\(metadata.name)", "file": "\(metadata.file)",
                                                       "calibration": "\(loaded.queue.calibrationSummary)"])
            } catch {
                problems.append("\(metadata.file): \(error)")
            }
        }
        return problems
    }

    /// Loads (or reloads, replacing the running copy) the model of that name described in a folder.
    @discardableResult
    public func load(named name: String, directory: String) throws -> LoadedModel {
        let (found, issues) = ModelDirectory.scan(directory)
        guard let metadata = found.first(where: { $0.name == name }) else {
            if let issue = issues.first(where: { $0.description.contains(name) }) {
                throw ServingError.modelUnavailable("model \(name) cannot be loaded: \(issue)")
            }
            throw ServingError.modelUnavailable("no model named \(name) in the model folder")
        }
        do {
            let loaded = try load(metadata, directory: directory)
            logger.info("loaded model", metadata: ["model": "\(metadata.name)", "file": "\(metadata.file)",
                                                   "calibration": "\(loaded.queue.calibrationSummary)"])
            return loaded
        } catch let error as ServingError {
            throw error
        } catch {
            // The running version, if any, keeps serving. The message names the file, not the folder.
            logger.warning("model \(name) failed to load: \(error)")
            let detail = "\(error)".replacingOccurrences(of: (directory as NSString).standardizingPath + "/", with: "")
                .replacingOccurrences(of: directory + "/", with: "")
            throw ServingError.modelUnavailable("model \(name) cannot be loaded from \(metadata.file): \(detail)")
        }
    }

    /// Removes a model. Requests still waiting in its queue get -32002 (model unavailable) at once;
    /// a batch already running finishes.
    public func unload(_ name: String) -> Bool {
        lock.lock()
        let old = models.removeValue(forKey: name)
        lock.unlock()
        if old != nil { metrics.modelLoad(model: name, outcome: "unloaded") }
        guard let old else { return false }
        old.queue.close(failingWaiting: .modelUnavailable("model \(name) was unloaded while the request waited"))
        trimWhenReleased(old)
        return true
    }

    func shutdown() {
        for model in all { model.queue.shutdown() }
    }

    /// Trims the heap once a replaced or unloaded version is gone, and logs how long its last requests
    /// held it (debug), or warns when it is still held after two minutes (its memory stays in use).
    private func trimWhenReleased(_ old: LoadedModel) {
        let logger = self.logger, name = old.name
        HeapPolicy.trimWhenReleased(old) { seconds in
            if let seconds {
                logger.debug("released a replaced or unloaded version", metadata: ["model": "\(name)", "after_s": "\(seconds)"])
            } else {
                logger.warning("a replaced or unloaded version of \(name) is still held after 120 s: its memory stays in use")
            }
        }
    }
}
