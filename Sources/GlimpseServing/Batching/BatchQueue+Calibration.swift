import GlimpseTensor

extension BatchQueue {
    /// The batch sizes timed before a model serves: every allowed size when the model lists them,
    /// otherwise 1, the powers of two below the largest batch, and the largest batch.
    static func calibrationSizes(allowed: [Int]?, maxBatchSize: Int) -> [Int] {
        if let allowed, !allowed.isEmpty { return Set(allowed.filter { $0 >= 1 }).sorted() }
        let largest = max(1, maxBatchSize)
        var sizes: Set<Int> = [1, largest]
        var n = 2
        while n < largest {
            sizes.insert(n)
            n *= 2
        }
        return sizes.sorted()
    }

    /// Rounds that time batch 1 and the larger batch calibration first preferred again (`timeSizes`).
    static let confirmationRounds = 2

    /// Nanoseconds of one batch of each size in `sizes`, as calibration times them.
    func timeSizes(_ sizes: [Int], parallel: Bool) throws -> [Int: UInt64] {
        var loaded: [Int: UInt64] = [:]
        for n in sizes {
            loaded[n] = try timeBatch(n, parallel: parallel)
            // Only batch 1's plan is kept: a new version is calibrated while the old one still serves
            // with its own plans, so holding a plan for every size timed would put the model in memory
            // twice during a reload. The others are built again when traffic needs them.
            if n != 1 { model.releaseCachedPlans(keeping: [1]) }
        }
        // A reload calibrates while the old version serves: on busy cores a run can take 2–4 times its
        // time (seen under the soak's overload: batch 1 read 1.4–6.1 ms for cifar10-large, whose true
        // cost per item is level across sizes), which picked batch limits from 1 to 8 at random. So
        // before a larger batch is preferred to single runs, both are timed again, alternately, and
        // the fastest time of each counts: contention only ever adds time.
        if let chosen = BatchScheduler.efficientBatchSize(calibration: loaded), chosen != 1, loaded[1] != nil {
            for _ in 0..<Self.confirmationRounds {
                loaded[1] = min(loaded[1] ?? .max, try timeBatch(1, parallel: parallel))
                loaded[chosen] = min(loaded[chosen] ?? .max, try timeBatch(chosen, parallel: parallel))
                model.releaseCachedPlans(keeping: [1])
            }
        }
        return loaded
    }

    /// The faster of two timed runs of a batch of `n`, after warming up (plans, caches, and the
    /// engine's choice to split batches or not).
    func timeBatch(_ n: Int, parallel: Bool) throws -> UInt64 {
        let input = Tensor(shape: Shape([n] + itemShape), dtype: inputDType)
        for _ in 0..<(n > 1 ? model.warmUpRuns : 1) { _ = try model.run([input], parallel: parallel) }
        var best = UInt64.max
        for _ in 0..<2 {
            let start = monotonicNanos()
            _ = try model.run([input], parallel: parallel)
            best = min(best, monotonicNanos() - start)
        }
        return best
    }
}
