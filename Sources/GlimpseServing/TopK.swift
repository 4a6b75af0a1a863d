import Foundation

/// Turns a model's raw output into the k best classes with probabilities.
public enum TopK {
    /// Softmax unless the scores already are a probability distribution (non-negative, summing to 1),
    /// then the `k` largest, best first.
    public static func select(scores: [Float], k: Int) -> [(index: Int, score: Float)] {
        guard !scores.isEmpty else { return [] }
        let probabilities = isDistribution(scores) ? scores : softmax(scores)
        let order = probabilities.indices.sorted { probabilities[$0] > probabilities[$1] || (probabilities[$0] == probabilities[$1] && $0 < $1) }
        return order.prefix(max(0, k)).map { ($0, probabilities[$0]) }
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
