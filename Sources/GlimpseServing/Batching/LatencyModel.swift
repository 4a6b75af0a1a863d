/// Online model of batch latency, t(n) = a·n + b, fitted by exponentially weighted least squares
/// over recent batches. Used to predict completion times for deadline-aware shedding and
/// variant selection.
public struct LatencyModel: Sendable, Hashable {
    /// Weight kept by old observations at each new one (0.95 ≈ the last 20 batches dominate).
    public var decay: Double
    private var sw = 0.0, sn = 0.0, st = 0.0, snn = 0.0, snt = 0.0
    public private(set) var observations = 0

    public init(decay: Double = 0.95, prior: (perItemNanos: Double, fixedNanos: Double)? = nil) {
        self.decay = decay
        if let prior {
            // Two virtual batches (sizes 1 and 8) carry the prior.
            observe(size: 1, nanos: prior.fixedNanos + prior.perItemNanos)
            observe(size: 8, nanos: prior.fixedNanos + 8 * prior.perItemNanos)
            observations = 0
        }
    }

    public mutating func observe(size: Int, nanos: Double) {
        let n = Double(size)
        sw = sw * decay + 1
        sn = sn * decay + n
        st = st * decay + nanos
        snn = snn * decay + n * n
        snt = snt * decay + n * nanos
        observations += 1
    }

    /// (a, b): nanoseconds per item and fixed nanoseconds per batch. Both are kept non-negative.
    public var coefficients: (a: Double, b: Double) {
        guard sw > 0 else { return (0, 0) }
        let meanN = sn / sw, meanT = st / sw
        let varN = snn / sw - meanN * meanN
        if varN < 1e-9 {
            // One batch size seen so far: attribute the time per item.
            return (max(0, meanT / max(meanN, 1)), 0)
        }
        var a = (snt / sw - meanN * meanT) / varN
        var b = meanT - a * meanN
        if a < 0 { a = 0; b = meanT }
        if b < 0 { b = 0; a = meanT / max(meanN, 1) }
        return (a, b)
    }

    /// Predicted nanoseconds for a batch of `size`.
    public func predict(size: Int) -> Double {
        let (a, b) = coefficients
        return a * Double(size) + b
    }

    public var isCalibrated: Bool { sw > 0 }
}
