import Foundation
import GlimpseEngine
import GlimpseImage
import GlimpseTensor
import Logging
import Metrics
import ServiceLifecycle

/// One prediction of a classification.
public struct Prediction: Sendable, Hashable {
    public var label: String
    public var index: Int
    public var score: Float
}

/// Milliseconds spent in each stage of one image's request.
public struct StageTiming: Sendable, Hashable {
    public var queue: Double
    public var decode: Double
    public var inference: Double
    public var total: Double
}

/// What `classify` returns for one image.
public struct ClassifyResult: Sendable {
    public var model: String
    public var variant: String
    public var version: String
    /// Why this variant served: `requested`, `ab_split`; with the split, `most_accurate`, `overflow`,
    /// `min_accuracy`, `deadline`, `fastest`; with `--selection switch`, `most_accurate`,
    /// `meets_deadline`, `deadline`, `fastest`.
    public var reason: String
    public var predictions: [Prediction]
    public var timing: StageTiming
    public var batchSize: Int
    public var image: ImageInfo
    /// Energy attributed to this image's inference, in millijoules.
    public var energyMillijoules: Double
    /// The item's whole first output (e.g. all class scores), as float32.
    public var scores: [Float]
}

/// A classification request, after the RPC layer has parsed and checked the parameters.
public struct ClassifyRequest: Sendable {
    public var images: [[UInt8]]
    public var model: String
    public var topK: Int
    public var crop: CropMode?
    /// Time budget of the whole call in milliseconds, from when the server received it.
    public var deadlineMs: Double?
    /// Only variants with at least this measured accuracy (0…1) may serve.
    public var minAccuracy: Double?
    /// Keeps a client on the same arm of an A/B split.
    public var clientID: String?
    /// Preprocessed inputs instead of encoded images: each the model's input for one item, float32 in
    /// `pixelShape` (which must equal the model's input shape less the batch). `images` is then empty.
    public var pixels: [[Float]] = []
    public var pixelShape: [Int] = []

    /// Items in the request, encoded or preprocessed.
    public var itemCount: Int { images.count + pixels.count }

    public init(images: [[UInt8]], model: String, topK: Int = 5, crop: CropMode? = nil, deadlineMs: Double? = nil,
                minAccuracy: Double? = nil, clientID: String? = nil) {
        self.minAccuracy = minAccuracy
        self.clientID = clientID
        self.images = images
        self.model = model
        self.topK = topK
        self.crop = crop
        self.deadlineMs = deadlineMs
    }
}

/// The serving facade: models, decode threads and batching queues.
public final class InferenceService: Sendable {
    public let configuration: ServingConfiguration
    public let registry: ModelRegistry
    let decodePool: ComputePool
    /// One thread for compiling, warming up and calibrating models loaded at run time, so neither a
    /// request's task nor the decode threads carry that work.
    let loadPool: ComputePool
    let logger: Logger
    public let energy: EnergyMeter
    private let inflight: InflightCounter
    let router: FamilyRouter
    /// Where this service's metrics go (and the layers above record theirs).
    public let metrics: MetricHandles
    let servingMetrics: ServingMetrics

    /// `metrics` defaults to the backend `MetricsSystem` was bootstrapped with, else none.
    public init(configuration: ServingConfiguration = .init(), energy: EnergyMeter = EnergyMeter(),
                metrics: MetricHandles = MetricHandles(factory: MetricsSystem.factory),
                logger: Logger = Logger(label: "glimpse.serving")) {
        self.configuration = configuration
        self.energy = energy
        self.logger = logger
        self.metrics = metrics
        let servingMetrics = ServingMetrics(metrics)
        self.servingMetrics = servingMetrics
        self.inflight = InflightCounter(metrics: servingMetrics)
        self.registry = ModelRegistry(configuration: configuration, logger: logger, metrics: servingMetrics)
        self.decodePool = ComputePool(threads: configuration.decodeThreads, name: "glimpse-decode")
        self.loadPool = ComputePool(threads: 1, name: "glimpse-load")
        var split = VariantSplit.Policy()
        split.margin = configuration.splitMargin
        self.router = FamilyRouter(selection: configuration.selection, splitPolicy: split, metrics: servingMetrics)
    }

    /// The model a request names, with `auto` (what a `classify` without `model` asks for) turned into
    /// the default model when it is loaded, else the only loaded family.
    public func resolveDefault(_ requested: String) throws -> String {
        guard requested == "auto" else { return requested }
        let all = registry.all
        if let name = configuration.defaultModel, all.contains(where: { $0.name == name || $0.metadata.family == name }) {
            return name
        }
        let families = Set(all.map(\.metadata.family)).sorted()
        if families.count == 1 { return families[0] }
        let loaded = families.isEmpty ? "none" : families.joined(separator: ", ")
        if let name = configuration.defaultModel {
            throw ServingError.unknownModel("no \"model\" given and the default model \"\(name)\" is not loaded; name one of the loaded families: \(loaded)")
        }
        throw ServingError.badParameter("no \"model\" given and no default model set (--default-model); name one of the loaded families: \(loaded)")
    }

    /// Classifies each image of the request; results come back in request order.
    public func classify(_ request: ClassifyRequest) async throws -> [ClassifyResult] {
        let route = try router.route(try resolveDefault(request.model), registry: registry,
                                     deadlineNanos: request.deadlineMs.map { UInt64(max(0, $0) * 1e6) },
                                     minAccuracy: request.minAccuracy, clientID: request.clientID, images: request.itemCount,
                                     now: monotonicNanos())
        let model = route.model
        let count = request.itemCount
        guard count > 0 else { throw ServingError.badParameter("no image given") }
        guard count <= configuration.maxImagesPerCall else {
            throw ServingError.badParameter("\(count) images in one call; the limit is \(configuration.maxImagesPerCall)")
        }
        if !request.pixels.isEmpty { try checkPixels(request, model: model) }
        guard request.topK >= 1 && request.topK <= configuration.maxTopK else {
            throw ServingError.badParameter("top_k must be between 1 and \(configuration.maxTopK)")
        }
        guard inflight.tryAdd(count, limit: configuration.maxInflightImages) else {
            throw ServingError.overloaded(reason: "queue_full", retryAfterMs: 100)
        }
        defer { inflight.add(-count) }
        let now = monotonicNanos()
        let deadline = request.deadlineMs.map { now &+ UInt64(max(0, $0) * 1e6 * (1 - configuration.deadlineHeadroom)) }
        // Refused before any decoding when the queue already says the answer would be late.
        try model.queue.admit(images: count, now: now, deadline: deadline,
                              decodeAhead: decodePool.pendingJobs, decodeThreads: decodePool.threadCount)
        // One image (the common call) runs in the caller's task: no child task to schedule.
        if count == 1, let image = request.images.first {
            return [try await classifyOne(image, model: model, reason: route.reason, topK: request.topK, crop: request.crop, deadline: deadline)]
        }
        return try await withThrowingTaskGroup(of: (Int, ClassifyResult).self) { group in
            for (i, image) in request.images.enumerated() {
                group.addTask { (i, try await self.classifyOne(image, model: model, reason: route.reason, topK: request.topK, crop: request.crop, deadline: deadline)) }
            }
            for (i, values) in request.pixels.enumerated() {
                group.addTask { (i, try await self.classifyPixels(values, model: model, reason: route.reason, topK: request.topK, deadline: deadline)) }
            }
            var results = [ClassifyResult?](repeating: nil, count: count)
            for try await (i, r) in group { results[i] = r }
            return results.compactMap { $0 }
        }
    }

    /// Images decoded in the calling task rather than on the decode pool: at most this many encoded
    /// bytes and declared pixels (256×256).
    static let inlineDecodeMaxBytes = 64 << 10
    static let inlineDecodeMaxPixels = 256 * 256

    func classifyOne(_ bytes: [UInt8], model: LoadedModel, reason: String, topK: Int, crop: CropMode?, deadline: UInt64?) async throws -> ClassifyResult {
        let start = monotonicNanos()
        let spec = model.metadata.preprocessing
        let queue = model.queue
        let limits = configuration.imageLimits, options = configuration.decodeOptions
        var incoming = true
        defer { if incoming { queue.incomingArrived() } }
        let decode = { @Sendable () throws -> (Tensor, ImageInfo, UInt64) in
            let began = monotonicNanos()
            // The pipeline writes every byte of the slot (NormalizeTests), so it is not zero-filled first.
            let tensor = Tensor(shape: Shape(queue.itemShape), dtype: queue.inputDType, zeroed: false)
            guard tensor.byteCount == spec.byteCount else {
                throw ServingError.modelUnavailable("model \(model.name): preprocessing makes \(spec.byteCount) bytes but the model input \(queue.itemShape) needs \(tensor.byteCount)")
            }
            let info = try bytes.withUnsafeBytes { raw in
                try ImagePipeline.preprocess(raw, spec: spec, crop: crop, limits: limits, options: options, into: tensor.rawPointer)
            }
            return (tensor, info, monotonicNanos() - began)
        }
        // A tiny image (a 28×28 digit, a 32×32 CIFAR photo) decodes in less CPU than the two thread
        // hand-offs to the decode pool and back cost (each a wake-up and a sleep when the server is not
        // saturated); larger ones go to the pool.
        let small = bytes.count <= Self.inlineDecodeMaxBytes
            && bytes.withUnsafeBytes { ImagePipeline.declaredPixels($0) ?? .max } <= Self.inlineDecodeMaxPixels
        let (tensor, info, work) = small ? try decode() : try await decodePool.run(decode)
        let decoded = monotonicNanos()
        incoming = false
        queue.incomingArrived()
        queue.notePreprocessing(nanos: work)
        if let deadline, decoded >= deadline {
            throw ServingError.deadlineExceeded("the time planned for the answer (deadline_ms less the headroom kept for transport) passed while the image was decoded (\(String(format: "%.1f", Double(decoded - start) / 1e6)) ms)")
        }
        return try await finish(tensor, info: info, model: model, reason: reason, topK: topK, deadline: deadline,
                                start: start, decoded: decoded)
    }

    /// Queues one preprocessed item and makes its result: metrics, energy, top-k.
    func finish(_ tensor: Tensor, info: ImageInfo, model: LoadedModel, reason: String, topK: Int, deadline: UInt64?,
                start: UInt64, decoded: UInt64) async throws -> ClassifyResult {
        let item = try await submit(tensor, to: model, deadline: deadline)
        let end = monotonicNanos()
        let joules = energy.joules(cpuNanos: item.cpuNanosPerItem)
        model.recorded.recordAnswer(decodeNanos: decoded - start, queueNanos: item.queueNanos, inferenceNanos: item.inferenceNanos,
                                    totalNanos: end - start, joules: joules, reason: reason)
        let predictions = TopK.select(scores: item.scores, k: topK).map {
            Prediction(label: model.label($0.index), index: $0.index, score: $0.score)
        }
        return ClassifyResult(
            model: model.metadata.family, variant: model.metadata.variant, version: model.metadata.version,
            reason: reason, predictions: predictions,
            timing: StageTiming(queue: Double(item.queueNanos) / 1e6, decode: Double(decoded - start) / 1e6,
                                inference: Double(item.inferenceNanos) / 1e6, total: Double(end - start) / 1e6),
            batchSize: item.batchSize, image: info, energyMillijoules: joules * 1000, scores: item.scores)
    }

    /// Submits to the model's queue. If that version was replaced (hot reload) between routing and
    /// submission, its queue no longer accepts work: the request moves to the version now loaded
    /// under the same name, so a reload fails no request.
    func submit(_ tensor: Tensor, to model: LoadedModel, deadline: UInt64?) async throws -> BatchItemResult {
        var target = model
        while true {
            do {
                return try await target.queue.submit(tensor, deadline: deadline)
            } catch ServingError.modelUnavailable(let why) where target.queue.isStopping {
                guard let newer = registry.model(named: target.name), newer !== target,
                      newer.queue.itemShape == target.queue.itemShape, newer.queue.inputDType == target.queue.inputDType else {
                    throw ServingError.modelUnavailable(why)
                }
                target = newer
            }
        }
    }

    /// Loads model `name` from `directory`, or a new version of it when it is loaded (the old one
    /// drains): compiled, warmed up and calibrated on the load thread.
    public func load(named name: String, directory: String) async throws -> LoadedModel {
        try await loadPool.run { try self.registry.load(named: name, directory: directory) }
    }

    /// Sets or clears the A/B split of a family (variant name → weight).
    public func setTraffic(family: String, weights: [String: Int]) throws {
        try router.setTraffic(family: family, weights: weights, registry: registry)
    }

    /// Per family, the load split in force (variant → share), the arrival rate it follows and the
    /// variants' capacities it was computed from (images per second).
    public var loadSplit: [String: (shares: [String: Double], arrivalRate: Double, capacities: [String: Double])] {
        router.splitSnapshot(now: monotonicNanos())
    }

    /// CPU time per request outside the engine, in nanoseconds, as the load split counts it (nil until measured).
    public var requestOverheadNanos: Double? { router.overheadCPUNanosPerRequest }
    /// Each variant's own CPU per request outside the engine (ns), once told apart (`VariantOverhead`).
    public var variantOverheadNanos: [String: Double] { router.variantOverheadNanos }

    /// Cores the process gets when it wants them all, as the load split counts them.
    public var availableCores: Double { router.availableCores }

    /// The A/B splits in force, by family.
    public var traffic: [String: [String: Int]] { router.trafficSnapshot() }

    /// Stops the queues after their queued work.
    public func shutdown() {
        registry.shutdown()
        decodePool.shutdown()
        loadPool.shutdown()
    }
}

/// In the executable's `ServiceGroup`, listed before the HTTP server: the group shuts services down in
/// reverse order, so the server stops accepting and finishes its requests first, then the queues run
/// what they hold and stop.
extension InferenceService: Service {
    public func run() async throws {
        // Returns at graceful shutdown, or throws when the group is cancelled: the queues stop either way.
        defer { shutdown() }
        try await gracefulShutdown()
    }
}

/// Requests in progress, exported as a gauge.
final class InflightCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    private let gauge: Gauge

    init(metrics: ServingMetrics) {
        self.gauge = metrics.inflightGauge()
    }

    func add(_ delta: Int) {
        lock.lock()
        value += delta
        let v = value
        lock.unlock()
        gauge.record(v)
    }

    /// Adds `n` unless that would pass `limit`.
    func tryAdd(_ n: Int, limit: Int) -> Bool {
        lock.lock()
        guard value + n <= limit else {
            lock.unlock()
            return false
        }
        value += n
        let v = value
        lock.unlock()
        gauge.record(v)
        return true
    }
}
