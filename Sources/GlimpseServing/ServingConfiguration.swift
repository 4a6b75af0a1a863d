import Foundation
import GlimpseImage

/// Settings of the serving layer.
public struct ServingConfiguration: Sendable {
    /// Threads that decode and preprocess images.
    public var decodeThreads: Int
    /// Intra-op threads of the engine for one batch.
    public var engineThreads: Int
    /// Batch workers per model.
    public var workersPerModel: Int
    public var batching: BatchScheduler.Configuration
    public var imageLimits: ImageLimits
    /// JPEG decoding choices (DCT scaling: faster on large photos, or bit-identical with Pillow).
    public var decodeOptions: DecodeOptions
    /// Most images in one `classify` call.
    public var maxImagesPerCall: Int
    /// Largest `top_k`.
    public var maxTopK: Int
    /// Images being decoded, queued or run at once, over all models; beyond it requests are refused
    /// with queue_full before any decoding, so memory stays bounded under any offered load.
    public var maxInflightImages: Int
    /// The family or variant that a `classify` without `model` (or with `"model": "auto"`) uses. When it
    /// is not loaded and only one family is, that family serves.
    public var defaultModel: String?
    /// Share of each `deadline_ms` the server keeps back for what happens outside its own planning:
    /// reading the request and writing the answer, transport, and error in its latency predictions.
    /// Admission and batching aim to answer within the rest.
    public var deadlineHeadroom: Double
    /// How a family's variants share its requests: split by capacity, or one at a time.
    public var selection: SelectionMode
    /// Share of the cores' time the split keeps free (`VariantSplit.Policy.margin`).
    public var splitMargin: Double
    /// A batch alone on the machine spreads over all engine threads only while fewer than this share
    /// of the recent batches began beside another (`EngineOccupancy`): 1 always, 0 never.
    public var parallelMaxOverlap: Double
    /// Most bytes the loaded models may hold together (weights and execution plans, as
    /// `LoadedModel.memory` counts them); a load that would go over it is refused. Nil: no limit.
    public var memoryBudgetBytes: Int?
    /// Keys of encrypted model files (`*.onnx.enc`), by key id.
    public var modelKeys = ModelKeyring()

    public init(decodeThreads: Int = ProcessInfo.processInfo.activeProcessorCount,
                engineThreads: Int = ProcessInfo.processInfo.activeProcessorCount,
                workersPerModel: Int = 1,
                batching: BatchScheduler.Configuration = .init(),
                imageLimits: ImageLimits = .init(),
                maxImagesPerCall: Int = 64,
                maxTopK: Int = 100,
                maxInflightImages: Int = 512,
                defaultModel: String? = nil,
                deadlineHeadroom: Double = 0.2,
                decodeOptions: DecodeOptions = .init(),
                selection: SelectionMode = .split,
                splitMargin: Double = 0.02,
                parallelMaxOverlap: Double = 0.2) {
        self.selection = selection
        self.parallelMaxOverlap = min(1, max(0, parallelMaxOverlap))
        self.splitMargin = min(0.9, max(-0.5, splitMargin))
        self.decodeOptions = decodeOptions
        self.defaultModel = defaultModel
        self.deadlineHeadroom = min(0.9, max(0, deadlineHeadroom))
        self.decodeThreads = max(1, decodeThreads)
        self.engineThreads = max(1, engineThreads)
        self.workersPerModel = max(1, workersPerModel)
        self.batching = batching
        self.imageLimits = imageLimits
        self.maxImagesPerCall = max(1, maxImagesPerCall)
        self.maxTopK = max(1, maxTopK)
        self.maxInflightImages = max(1, maxInflightImages)
    }
}
