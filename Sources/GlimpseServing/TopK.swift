import Foundation

/// Turns a model's raw output into the k best classes with probabilities.
public enum TopK {
    /// Softmax unless the scores already are a probability distribution (non-negative, summing to 1),
    /// then the `k` largest, best first.
    public static func select(scores: [Float], k: Int) -> [(index: Int, score: Float)] {
        guard !scores.isEmpty else { return [] }
        let probabilities = isDistribution(scores) ? scores : softmax(scores)
        let k = min(max(0, k), probabilities.count)
        /// Higher probability first, the lower index first among equals.
        func before(_ a: Int, _ b: Int) -> Bool {
            probabilities[a] > probabilities[b] || (probabilities[a] == probabilities[b] && a < b)
        }
        if k * 8 >= probabilities.count {
            return probabilities.indices.sorted(by: before).prefix(k).map { ($0, probabilities[$0]) }
        }
        // A few of many (top 5 of 1,000 classes): one pass keeping the best k in order.
        var best: [Int] = []
        best.reserveCapacity(k)
        for i in probabilities.indices {
            if best.count == k {
                guard let last = best.last, before(i, last) else { continue }
                best.removeLast()
            }
            var position = best.count
            while position > 0 && before(i, best[position - 1]) { position -= 1 }
            best.insert(i, at: position)
        }
        return best.map { ($0, probabilities[$0]) }
    }

    static func isDistribution(_ v: [Float]) -> Bool {
        var sum: Float = 0
        for x in v {
            if !(x >= 0 && x <= 1) { return false }
            sum += x
        }
        return abs(sum - 1) < 1e-2
    }

    public static func softmax(_ v: [Float]) -> [Float] {
        let m = v.max() ?? 0
        let e = v.map { expf($0 - m) }
        let s = e.reduce(0, +)
        return e.map { $0 / s }
    }
}
