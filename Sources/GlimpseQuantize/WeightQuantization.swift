/// The numeric side of quantization: float16 rounding, symmetric int8 per channel, and 1-D k-means
/// weight sharing. Pure functions on arrays; the ONNX side lives in `ModelQuantizer`.
enum WeightQuantization {
    /// IEEE half-precision bit patterns (round to nearest even; values past ±65504 clamp).
    static func float16Bits(_ values: [Float]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 2)
        for v in values {
            let h = Float16(min(max(v, -65504), 65504)).bitPattern
            out.append(UInt8(truncatingIfNeeded: h))
            out.append(UInt8(truncatingIfNeeded: h >> 8))
        }
        return out
    }

    /// Symmetric int8 per channel along `axis`: `q = round(w / s)` in [-127, 127] with
    /// `s = max|w| / 127` for the channel (1 for an all-zero channel). Returns the int8 values
    /// (as bytes) and one scale per channel.
    static func symmetricInt8(_ values: [Float], dims: [Int], axis: Int) -> (q: [UInt8], scales: [Float]) {
        let channels = dims[axis]
        let inner = dims[(axis + 1)...].reduce(1, *)
        var maxAbs = [Float](repeating: 0, count: channels)
        for (i, v) in values.enumerated() {
            let c = (i / inner) % channels
            maxAbs[c] = max(maxAbs[c], abs(v))
        }
        let scales = maxAbs.map { $0 > 0 ? $0 / 127 : 1 }
        var q = [UInt8](repeating: 0, count: values.count)
        for (i, v) in values.enumerated() {
            let c = (i / inner) % channels
            let r = (v / scales[c]).rounded(.toNearestOrEven)
            q[i] = UInt8(bitPattern: Int8(min(max(r, -127), 127)))
        }
        return (q, scales)
    }

    /// The float values `symmetricInt8` stands for: `q · s` of each value's channel.
    static func restoredInt8(_ q: [UInt8], scales: [Float], dims: [Int], axis: Int) -> [Float] {
        let inner = dims[(axis + 1)...].reduce(1, *)
        return q.indices.map { Float(Int8(bitPattern: q[$0])) * scales[($0 / inner) % scales.count] }
    }

    /// 1-D k-means (Lloyd) of `values` into at most `k` centroids, deterministic (no random start).
    ///
    /// Starts (`initialization`): evenly spaced over [min, max] (Deep Compression, Han et al. 2016:
    /// keeps centroids for the rare large weights), at the quantiles (follows the density), or half
    /// of each. In one dimension every cluster is an interval of the sorted values, so an iteration
    /// is a binary search per boundary plus prefix sums: O(k log n). Iterations stop when no centroid
    /// moves by more than 1e-7 of the range, or after `maxIterations`.
    /// Returns the sorted centroids and one index per value.
    static func kmeans(_ values: [Float], k: Int, maxIterations: Int,
                       initialization: KMeansInitialization = .linear) -> (centroids: [Float], indices: [UInt8]) {
        precondition(k >= 1 && k <= 256, "k must be in 1...256")
        let sorted = values.sorted()
        let n = sorted.count
        guard n > 0 else { return ([0], []) }
        var prefix = [Double](repeating: 0, count: n + 1)
        for i in 0..<n { prefix[i + 1] = prefix[i] + Double(sorted[i]) }
        let lo = sorted[0], hi = sorted[n - 1]
        let linear = { (m: Int) -> [Float] in m == 1 ? [(lo + hi) / 2] : (0..<m).map { lo + (hi - lo) * Float($0) / Float(m - 1) } }
        let quantiles = { (m: Int) -> [Float] in (0..<m).map { sorted[min(n - 1, Int((Double($0) + 0.5) / Double(m) * Double(n)))] } }
        var c: [Float]
        if k == 1 {
            c = [Float(prefix[n] / Double(n))]
        } else {
            switch initialization {
            case .linear: c = linear(k)
            case .quantile: c = quantiles(k)
            case .mixed: c = (linear(k / 2) + quantiles(k - k / 2)).sorted()
            }
        }

        /// First index whose value is >= x.
        func lowerBound(_ x: Float) -> Int {
            var a = 0, b = n
            while a < b {
                let m = (a + b) / 2
                if sorted[m] < x { a = m + 1 } else { b = m }
            }
            return a
        }
        let tolerance = max(abs(lo), abs(hi)) * 1e-7
        for _ in 0..<maxIterations where k > 1 {
            var moved: Float = 0
            var start = 0
            var next = c
            for j in 0..<k {
                let end = j == k - 1 ? n : lowerBound((c[j] + c[j + 1]) / 2)
                if end > start {
                    let mean = Float((prefix[end] - prefix[start]) / Double(end - start))
                    moved = max(moved, abs(mean - c[j]))
                    next[j] = mean
                }
                start = max(start, end)
            }
            c = next.sorted()
            if moved <= tolerance { break }
        }
        // Assign each value to its nearest centroid (binary search over the midpoints).
        let mids = (0..<max(0, k - 1)).map { (c[$0] + c[$0 + 1]) / 2 }
        var indices = [UInt8](repeating: 0, count: values.count)
        for (i, v) in values.enumerated() {
            var a = 0, b = mids.count
            while a < b {
                let m = (a + b) / 2
                if mids[m] <= v { a = m + 1 } else { b = m }
            }
            indices[i] = UInt8(a)
        }
        return (c, indices)
    }
}
