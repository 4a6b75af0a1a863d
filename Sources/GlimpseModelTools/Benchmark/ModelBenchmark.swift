import Foundation
import GlimpseEngine
import GlimpseServing
import GlimpseTensor

/// `glimpse bench --models`: each loaded model's latency at batch 1, throughput at its best batch size
/// and energy per image, measured on the engine the server runs (the model as the registry loaded
/// it), with its manifest accuracy and file size beside them.
///
/// Each point runs batches of one size back to back on the model's engine threads, after two warm-up
/// runs, for a time budget (at least `minRuns` runs): the median run time is the latency, images over
/// the summed run time the throughput. Inputs are a fixed synthetic image (the cost of these networks
/// does not depend on pixel values); decoding and preprocessing are not included.
public enum ModelBenchmark {
    public struct Options: Sendable {
        /// Time budget per batch size, seconds.
        public var secondsPerPoint: Double
        /// Batch sizes tried on models with a free batch dimension (a fixed one is used as is).
        public var batchSizes: [Int]
        public var minRuns: Int

        public init(secondsPerPoint: Double = 1, batchSizes: [Int] = [1, 8, 32], minRuns: Int = 5) {
            self.secondsPerPoint = secondsPerPoint
            self.batchSizes = batchSizes
            self.minRuns = max(1, minRuns)
        }
    }

    /// One batch size of one model.
    public struct Point: Sendable, Equatable, Codable {
        public var batch: Int
        public var runs: Int
        /// Median wall time of one run of the batch, ms.
        public var medianMs: Double
        public var imagesPerSecond: Double
        public var joulesPerImage: Double
    }

    /// One model: manifest figures and measurements.
    public struct Row: Sendable, Equatable, Codable {
        public var model: String
        public var family: String
        public var variant: String
        public var accuracy: Double?
        public var accuracyDataset: String?
        public var fileBytes: Int
        public var engineThreads: Int
        public var points: [Point]
        /// Energy figures' source: `rapl` (package energy over the runs) or `estimate` (CPU time × watts per core).
        public var energySource: String
        public var wattsPerCore: Double

        /// Median latency of a batch of one (or of the model's fixed batch when it is not 1), ms.
        public var latencyMs: Double { (points.first { $0.batch == 1 } ?? points.first)?.medianMs ?? 0 }
        /// The point with the highest throughput.
        public var best: Point? { points.max { $0.imagesPerSecond < $1.imagesPerSecond } }
    }

    /// Batch sizes to measure for a model whose input is `shape` (batch first; -1 or 0 when free).
    public static func batchSizes(forInput shape: [Int], requested: [Int]) -> [Int] {
        if let first = shape.first, first > 0 { return [first] }
        let sizes = Array(Set(requested.filter { $0 >= 1 })).sorted()
        return sizes.isEmpty ? [1] : sizes
    }

    /// Measures one loaded model.
    public static func run(_ model: LoadedModel, options: Options = .init(), energy: EnergyMeter,
                           engineThreads: Int) throws -> Row {
        guard let input = model.model.inputs.first else { throw EngineError("model \(model.name) has no inputs") }
        let itemShape = Array(input.shape.dropFirst()).map { max($0, 1) }
        var points: [Point] = []
        for n in batchSizes(forInput: input.shape, requested: options.batchSizes) {
            points.append(try measure(model.model, batch: n, itemShape: itemShape, dtype: input.dtype, options: options, energy: energy))
        }
        return Row(model: model.name, family: model.metadata.family, variant: model.metadata.variant,
                   accuracy: model.metadata.accuracy, accuracyDataset: model.metadata.accuracyDataset,
                   fileBytes: model.fileBytes, engineThreads: engineThreads, points: points,
                   energySource: energy.source.rawValue, wattsPerCore: energy.configuredWattsPerCore)
    }

    static func measure(_ model: CompiledModel, batch n: Int, itemShape: [Int], dtype: DType, options: Options,
                        energy: EnergyMeter) throws -> Point {
        let tensor = Tensor(shape: Shape([n] + itemShape), dtype: dtype)
        fillSynthetic(tensor)
        for _ in 0..<2 { _ = try model.run([tensor]) }
        var times: [UInt64] = []
        let budget = UInt64(max(0, options.secondsPerPoint) * 1e9)
        let cpuStart = CPUClock.thread() &+ model.engineThreadsCPUNanos()
        let joulesStart = energy.source == .rapl ? energy.totalJoules() : 0
        let start = DispatchTime.now().uptimeNanoseconds
        repeat {
            let t0 = DispatchTime.now().uptimeNanoseconds
            _ = try model.run([tensor])
            times.append(DispatchTime.now().uptimeNanoseconds - t0)
        } while times.count < options.minRuns || (DispatchTime.now().uptimeNanoseconds - start < budget && times.count < 1_000_000)
        let cpu = (CPUClock.thread() &+ model.engineThreadsCPUNanos()) &- cpuStart
        let images = Double(n * times.count)
        let joules = energy.source == .rapl ? energy.totalJoules() - joulesStart : energy.joules(cpuNanos: cpu)
        let total = Double(times.reduce(0, +)) / 1e9
        return Point(batch: n, runs: times.count, medianMs: median(times) / 1e6,
                     imagesPerSecond: total > 0 ? images / total : 0, joulesPerImage: max(0, joules) / images)
    }

    static func median(_ values: [UInt64]) -> Double {
        let s = values.sorted()
        guard !s.isEmpty else { return 0 }
        return s.count % 2 == 1 ? Double(s[s.count / 2]) : (Double(s[s.count / 2 - 1]) + Double(s[s.count / 2])) / 2
    }

    /// A fixed, image-like input: a smooth pattern in [0, 1) (float32) or its float16 equivalent.
    static func fillSynthetic(_ tensor: Tensor) {
        let count = tensor.count
        switch tensor.dtype {
        case .float32:
            let p = tensor.rawPointer.bindMemory(to: Float.self, capacity: count)
            for i in 0..<count { p[i] = Float((i * 37) % 255) / 255 }
        case .float16:
            let p = tensor.rawPointer.bindMemory(to: UInt16.self, capacity: count)
            for i in 0..<count { p[i] = Float16(Float((i * 37) % 255) / 255).bitPattern }
        default:
            tensor.rawPointer.initializeMemory(as: UInt8.self, repeating: 0, count: tensor.byteCount)
        }
    }
}
