/// A model's engine CPU time per item when it runs full batches, which is what it costs per item at
/// its capacity, estimated from its calibration and kept current by the batches it runs.
///
/// The load split needs each variant's capacity as if it had the cores to itself. Two figures a
/// queue can see read low while its family is split:
/// - the wall time of its recent batches, because the other variants' workers run on the same cores
///   at the same time (two queues of two workers on two cores double every batch's wall time);
/// - the CPU time per item of its recent batches, because below capacity its batches are small and a
///   batch's fixed cost is shared by fewer items.
///
/// So calibration (before the model serves, with the cores to itself) gives the shape of the cost
/// over batch sizes, and each batch run since gives one number: how its CPU time compares with what
/// calibration measured for a batch of its size (the machine turned slower or faster, the kernels
/// warmed up). The estimate is calibration's time per item of a full batch times that ratio,
/// exponentially weighted over batches. Pure: the queue passes the batch sizes and CPU times.
public struct FullBatchCost: Sendable, Equatable {
    /// Calibration: batch size → nanoseconds per batch, with the cores to itself.
    public let calibrated: [Int: Double]
    /// The batch size the queue forms at capacity.
    public let fullSize: Int
    /// Weight of one batch in the ratio.
    public var weight: Double
    /// Measured CPU time over calibrated time, exponentially weighted over batches.
    public private(set) var ratio: Double

    /// `calibrated`: batch size → nanoseconds (at least one entry). `initialRatio`: CPU per wall
    /// nanosecond of calibration's runs (the threads a calibration run used, for a parallel one).
    public init?(calibrated: [Int: UInt64], fullSize: Int, initialRatio: Double = 1, weight: Double = 0.05) {
        let valid = calibrated.filter { $0.key >= 1 && $0.value > 0 }.mapValues { Double($0) }
        guard !valid.isEmpty, fullSize >= 1 else { return nil }
        self.calibrated = valid
        self.fullSize = fullSize
        self.ratio = max(1e-3, initialRatio)
        self.weight = min(1, max(0, weight))
    }

    /// Calibration's nanoseconds for a batch of `size`: measured, or linear between the nearest
    /// measured sizes (a batch costs a fixed part plus a part per item), or scaled from the nearest
    /// one outside the measured range.
    public func calibratedNanos(size: Int) -> Double {
        if let t = calibrated[size] { return t }
        let sizes = calibrated.keys.sorted()
        let below = sizes.last { $0 < size }
        let above = sizes.first { $0 > size }
        switch (below, above) {
        case let (b?, a?):
            let (tb, ta) = (calibrated[b] ?? 0, calibrated[a] ?? 0)
            return tb + (ta - tb) * Double(size - b) / Double(a - b)
        case let (b?, nil):
            return (calibrated[b] ?? 0) * Double(size) / Double(b)
        case let (nil, a?):
            return (calibrated[a] ?? 0) * Double(size) / Double(a)
        case (nil, nil):
            return 0
        }
    }

    /// Takes a batch of `size` items that used `cpuNanos` of CPU time.
    public mutating func observe(size: Int, cpuNanos: UInt64) {
        guard size >= 1, cpuNanos > 0 else { return }
        let expected = calibratedNanos(size: size)
        guard expected > 0 else { return }
        let r = Double(cpuNanos) / expected
        ratio += weight * (r - ratio)
    }

    /// Engine CPU nanoseconds per item at full batches.
    public var cpuNanosPerItem: Double {
        calibratedNanos(size: fullSize) / Double(fullSize) * ratio
    }
}
