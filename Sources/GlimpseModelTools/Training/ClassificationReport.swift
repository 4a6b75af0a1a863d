/// Accuracy, per-class precision and recall, and the confusion matrix of predictions against labels.
public struct ClassificationReport: Sendable {
    public let labels: [String]
    /// `confusion[truth][predicted]`.
    public let confusion: [[Int]]

    public init(labels: [String], truth: [Int], predicted: [Int]) {
        self.labels = labels
        var m = Array(repeating: Array(repeating: 0, count: labels.count), count: labels.count)
        for (t, p) in zip(truth, predicted) { m[t][p] += 1 }
        confusion = m
    }

    public var total: Int { confusion.reduce(0) { $0 + $1.reduce(0, +) } }
    public var correct: Int { labels.indices.reduce(0) { $0 + confusion[$1][$1] } }
    public var accuracy: Double { total > 0 ? Double(correct) / Double(total) : 0 }

    /// Of the items predicted as class k, the share that are k (nil when none was).
    public func precision(_ k: Int) -> Double? {
        let predicted = confusion.reduce(0) { $0 + $1[k] }
        return predicted > 0 ? Double(confusion[k][k]) / Double(predicted) : nil
    }

    /// Of the items of class k, the share predicted as k (nil when there were none).
    public func recall(_ k: Int) -> Double? {
        let actual = confusion[k].reduce(0, +)
        return actual > 0 ? Double(confusion[k][k]) / Double(actual) : nil
    }

    /// A table per class (precision, recall, count) and the confusion matrix, rows = truth.
    public var formatted: String {
        func percent(_ v: Double?) -> String { v.map { pad(String(format1: $0 * 100) + "%", 8) } ?? pad("-", 8) }
        let width = max(5, labels.map(\.count).max() ?? 5)
        var lines = [pad("class", width) + pad("precision", 11) + pad("recall", 8) + pad("images", 8)]
        for k in labels.indices {
            lines.append(pad(labels[k], width) + "   " + percent(precision(k)) + percent(recall(k)) + pad(String(confusion[k].reduce(0, +)), 8))
        }
        lines.append("")
        lines.append("confusion matrix (rows: true class, columns: predicted, in the order above)")
        let cell = max(4, String(confusion.flatMap { $0 }.max() ?? 0).count + 1)
        for k in labels.indices {
            lines.append(pad(labels[k], width) + confusion[k].map { pad(String($0), cell) }.joined())
        }
        return lines.joined(separator: "\n")
    }

    /// `s` right-aligned in `width` columns (left-aligned for the first column of names).
    private func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s + " " : String(repeating: " ", count: width - s.count) + s
    }
}

extension String {
    /// One decimal, without Foundation's formatter.
    init(format1 v: Double) {
        let tenths = Int((v * 10).rounded())
        self = "\(tenths / 10).\(abs(tenths % 10))"
    }
}
