/// Feature vectors, one row per example, row-major, with their class indices.
public struct FeatureMatrix: Sendable {
    public private(set) var rows: Int
    public let columns: Int
    public private(set) var values: [Float]
    public private(set) var labels: [Int]

    public init(columns: Int) {
        precondition(columns >= 1, "a feature matrix needs at least one column")
        self.columns = columns
        rows = 0
        values = []
        labels = []
    }

    public init(columns: Int, values: [Float], labels: [Int]) {
        precondition(columns >= 1 && values.count == columns * labels.count, "values do not match rows × columns")
        self.columns = columns
        self.rows = labels.count
        self.values = values
        self.labels = labels
    }

    /// Appends one example.
    public mutating func append<C: Collection>(_ row: C, label: Int) where C.Element == Float {
        precondition(row.count == columns, "row of \(row.count) values in a matrix of \(columns) columns")
        values.append(contentsOf: row)
        labels.append(label)
        rows += 1
    }

    public func row(_ i: Int) -> ArraySlice<Float> { values[i * columns..<(i + 1) * columns] }

    /// The rows at `indices`, in that order.
    public func subset(_ indices: [Int]) -> FeatureMatrix {
        var out = FeatureMatrix(columns: columns)
        out.values.reserveCapacity(indices.count * columns)
        for i in indices { out.append(row(i), label: labels[i]) }
        return out
    }
}

/// Per-column mean and standard deviation, to train on standardized features (a column that never
/// varies keeps a deviation of 1). The trained weights are mapped back onto the raw features by
/// `fold`, so the exported head reads the features as the base model gives them.
public struct Standardizer: Sendable {
    public let mean: [Float]
    public let deviation: [Float]

    public init(fitting m: FeatureMatrix) {
        var mean = [Double](repeating: 0, count: m.columns)
        var square = [Double](repeating: 0, count: m.columns)
        for i in 0..<m.rows {
            let base = i * m.columns
            for j in 0..<m.columns {
                let v = Double(m.values[base + j])
                mean[j] += v
                square[j] += v * v
            }
        }
        let n = Double(max(1, m.rows))
        self.mean = mean.map { Float($0 / n) }
        self.deviation = zip(mean, square).map { sum, sq in
            let variance = sq / n - (sum / n) * (sum / n)
            return variance > 1e-12 ? Float(variance.squareRoot()) : 1
        }
    }

    public func apply(_ m: FeatureMatrix) -> FeatureMatrix {
        var values = m.values
        for i in 0..<m.rows {
            let base = i * m.columns
            for j in 0..<m.columns { values[base + j] = (values[base + j] - mean[j]) / deviation[j] }
        }
        return FeatureMatrix(columns: m.columns, values: values, labels: m.labels)
    }

    /// Weights `[classes, columns]` and bias trained on standardized features, rewritten to read raw
    /// features: w' = w / σ, b' = b − Σ w·μ/σ.
    public func fold(weights: [Float], bias: [Float]) -> (weights: [Float], bias: [Float]) {
        let columns = mean.count
        var w = weights, b = bias
        for k in 0..<bias.count {
            var shift = 0.0
            for j in 0..<columns {
                let scaled = weights[k * columns + j] / deviation[j]
                w[k * columns + j] = scaled
                shift += Double(scaled) * Double(mean[j])
            }
            b[k] = Float(Double(bias[k]) - shift)
        }
        return (w, b)
    }
}
