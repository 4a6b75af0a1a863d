import Foundation
import GlimpseEngine
import GlimpseImage
import GlimpseTensor

/// A model that is loaded, compiled and has a batching queue.
public final class LoadedModel: @unchecked Sendable {
    public let metadata: ModelMetadata
    public let model: CompiledModel
    public let labels: [String]
    public let fileBytes: Int
    public let loadedAt: Date
    let queue: BatchQueue
    /// Its per-request metric handles.
    let recorded: ModelMetrics

    init(metadata: ModelMetadata, model: CompiledModel, labels: [String], fileBytes: Int, queue: BatchQueue, recorded: ModelMetrics) {
        self.metadata = metadata
        self.model = model
        self.labels = labels
        self.fileBytes = fileBytes
        self.loadedAt = Date()
        self.queue = queue
        self.recorded = recorded
    }

    public var name: String { metadata.name }

    /// A snapshot of the model's queue, for `server.stats`.
    public struct Stats: Sendable {
        public var queueLength: Int
        public var perItemNanos: Double
        public var perBatchNanos: Double
        public var batchesObserved: Int
    }

    public var stats: Stats {
        let latency = queue.latencyModel
        let (a, b) = latency.coefficients
        return Stats(queueLength: queue.queueLength, perItemNanos: a, perBatchNanos: b, batchesObserved: latency.observations)
    }

    /// Memory the model holds now, in bytes: tensors of its weights (constants and packed copies)
    /// and of its cached execution plans (activation buffers and scratch).
    public struct Memory: Sendable {
        public var weightBytes: Int
        public var planBytes: Int
        public var plans: Int
        /// Cached plans per batch size.
        public var plansByBatch: [Int: Int]
        public var totalBytes: Int { weightBytes + planBytes }
    }

    public var memory: Memory {
        Memory(weightBytes: model.weightMemory.bytes, planBytes: model.planMemory.bytes, plans: model.cachedPlans,
               plansByBatch: model.cachedPlansBySize)
    }

    /// Label of class `index`, or `class_<index>` when the model has no (or too few) labels.
    public func label(_ index: Int) -> String {
        index >= 0 && index < labels.count ? labels[index] : "class_\(index)"
    }
}

/// Reads label files: one label per line; blank lines are kept as empty labels only inside the file.
enum LabelLoader {
    static func load(metadata: ModelMetadata, directory: String, classes: Int?) -> [String] {
        var candidates: [String] = []
        if let file = metadata.labelsFile { candidates.append((directory as NSString).appendingPathComponent(file)) }
        let stem = (metadata.file as NSString).deletingPathExtension
        candidates.append((directory as NSString).appendingPathComponent(stem + ".labels.txt"))
        candidates.append((directory as NSString).appendingPathComponent("labels.txt"))
        if classes == 1000 {
            candidates.append((directory as NSString).appendingPathComponent("imagenet_classes.txt"))
            candidates.append((directory as NSString).appendingPathComponent("labels/imagenet_classes.txt"))
            candidates.append(((directory as NSString).deletingLastPathComponent as NSString).appendingPathComponent("labels/imagenet_classes.txt"))
        }
        for path in candidates {
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            var lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map {
                String($0).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            while lines.last == "" { lines.removeLast() }
            if classes == nil || lines.count == classes { return lines }
        }
        if let classes, classes == 10, metadata.preprocessing.channelOrder == .gray {
            return (0..<10).map(String.init)
        }
        return []
    }
}
