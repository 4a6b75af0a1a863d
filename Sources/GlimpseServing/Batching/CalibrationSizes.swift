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
}
