import Dispatch
import GlimpseTensor
#if canImport(Glibc)
import Glibc
#endif

/// A head with one hidden layer: p = softmax(W2·relu(W1·x + b1) + b2), trained by Adam on
/// minibatches with a cosine learning-rate schedule, weight decay, class weights, and early stopping
/// on the validation accuracy of each epoch (the best epoch's weights are kept).
public struct MLPHead: Sendable {
    public let columns: Int
    public let hidden: Int
    public let classes: Int
    /// `[W1 (hidden × columns), b1 (hidden), W2 (classes × hidden), b2 (classes)]`.
    public var parameters: [Float]

    public struct Options: Sendable {
        public var epochs = 60
        public var batch = 128
        public var learningRate: Float = 1e-3
        public var weightDecay: Float = 1e-4
        public var patience = 10
        public var threads = 1
        public var seed: UInt64 = 1
        public init() {}
    }

    public init(columns: Int, hidden: Int, classes: Int, seed: UInt64) {
        precondition(columns >= 1 && hidden >= 1 && classes >= 2, "an MLP head needs features, hidden units and two classes")
        self.columns = columns
        self.hidden = hidden
        self.classes = classes
        var generator = SplitMix64(seed: seed)
        func uniform() -> Float { Float(generator.next() >> 40) / Float(1 << 23) - 1 } // [-1, 1)
        // He-style uniform ranges: variance 2/fan_in for the ReLU layer, 1/fan_in for the output.
        let r1 = (6 / Float(columns)).squareRoot(), r2 = (3 / Float(hidden)).squareRoot()
        parameters = (0..<hidden * columns).map { _ in r1 * uniform() } + [Float](repeating: 0, count: hidden)
            + (0..<classes * hidden).map { _ in r2 * uniform() } + [Float](repeating: 0, count: classes)
    }

    var offsets: (b1: Int, w2: Int, b2: Int) {
        (hidden * columns, hidden * columns + hidden, hidden * columns + hidden + classes * hidden)
    }

    public var layer1: (weights: [Float], bias: [Float]) {
        let o = offsets
        return (Array(parameters[0..<o.b1]), Array(parameters[o.b1..<o.w2]))
    }

    public var layer2: (weights: [Float], bias: [Float]) {
        let o = offsets
        return (Array(parameters[o.w2..<o.b2]), Array(parameters[o.b2...]))
    }

    /// Probabilities of one row into `p` (`classes` values), the hidden activations into `h`.
    func forward(_ theta: UnsafePointer<Float>, _ x: UnsafePointer<Float>, h: UnsafeMutablePointer<Float>, p: UnsafeMutablePointer<Float>) {
        let o = offsets
        for j in 0..<hidden { h[j] = max(0, Vector.dot(theta + j * columns, x, count: columns) + theta[o.b1 + j]) }
        for k in 0..<classes { p[k] = Vector.dot(theta + o.w2 + k * hidden, UnsafePointer(h), count: hidden) + theta[o.b2 + k] }
        Vector.softmax(p, count: classes)
    }

    public func predict(_ m: FeatureMatrix) -> [Int] {
        var h = [Float](repeating: 0, count: hidden), p = [Float](repeating: 0, count: classes)
        return parameters.withUnsafeBufferPointer { t in
            m.values.withUnsafeBufferPointer { x in
                (0..<m.rows).map { i in
                    forward(t.baseAddress!, x.baseAddress! + i * columns, h: &h, p: &p)
                    var best = 0
                    for k in 1..<classes where p[k] > p[best] { best = k }
                    return best
                }
            }
        }
    }

    /// The mean weighted cross-entropy gradient over `rows` (weight decay not included).
    func gradient(_ m: FeatureMatrix, rows: ArraySlice<Int>, classWeights: [Float], threads: Int) -> [Float] {
        let chunks = max(1, min(threads, rows.count / 16))
        let size = parameters.count
        let sums = UnsafeMutablePointer<Float>.allocate(capacity: chunks * size)
        sums.initialize(repeating: 0, count: chunks * size)
        defer { sums.deallocate() }
        let weights = UnsafeMutablePointer<Float>.allocate(capacity: chunks)
        defer { weights.deallocate() }
        let rowList = Array(rows), o = offsets, (hidden, classes, columns) = (self.hidden, self.classes, self.columns)
        parameters.withUnsafeBufferPointer { t in
            m.values.withUnsafeBufferPointer { x in
                DispatchQueue.concurrentPerform(iterations: chunks) { c in
                    let g = sums + c * size
                    var h = [Float](repeating: 0, count: hidden), p = [Float](repeating: 0, count: classes)
                    var dh = [Float](repeating: 0, count: hidden)
                    var total: Float = 0
                    for r in rowList.count * c / chunks..<rowList.count * (c + 1) / chunks {
                        let i = rowList[r], row = x.baseAddress! + i * columns, y = m.labels[i], w = classWeights[y]
                        total += w
                        forward(t.baseAddress!, row, h: &h, p: &p)
                        for j in 0..<hidden { dh[j] = 0 }
                        for k in 0..<classes {
                            let d = w * (p[k] - (k == y ? 1 : 0))
                            h.withUnsafeBufferPointer { Vector.axpy(d, $0.baseAddress!, g + o.w2 + k * hidden, count: hidden) }
                            g[o.b2 + k] += d
                            dh.withUnsafeMutableBufferPointer { Vector.axpy(d, t.baseAddress! + o.w2 + k * hidden, $0.baseAddress!, count: hidden) }
                        }
                        for j in 0..<hidden where h[j] > 0 {
                            Vector.axpy(dh[j], row, g + j * columns, count: columns)
                            g[o.b1 + j] += dh[j]
                        }
                    }
                    weights[c] = total
                }
            }
        }
        var out = [Float](repeating: 0, count: size)
        var total: Float = 0
        for c in 0..<chunks {
            total += weights[c]
            for j in 0..<size { out[j] += sums[c * size + j] }
        }
        let scale = total > 0 ? 1 / total : 0
        for j in 0..<size { out[j] *= scale }
        return out
    }

    /// Trains on `train`, keeping the weights of the epoch with the best validation accuracy.
    /// `afterEpoch` gets (epoch, validation accuracy or nil) and returns false to stop.
    public mutating func train(_ train: FeatureMatrix, validation: FeatureMatrix?, classWeights: [Float], options: Options,
                               afterEpoch: (Int, Double?) -> Bool) -> (epochs: Int, bestEpoch: Int, accuracy: Double?) {
        var first = [Float](repeating: 0, count: parameters.count), second = first
        let (beta1, beta2, epsilon): (Float, Float, Float) = (0.9, 0.999, 1e-8)
        var order = Array(0..<train.rows), step = 0
        var best = (epoch: 0, accuracy: -1.0, parameters: parameters)
        var generator = SplitMix64(seed: options.seed &+ 1)
        let batchesPerEpoch = (train.rows + options.batch - 1) / options.batch
        let totalSteps = max(1, options.epochs * batchesPerEpoch)
        var epoch = 0
        while epoch < options.epochs {
            epoch += 1
            order.shuffle(using: &generator)
            var start = 0
            while start < order.count {
                let rows = order[start..<min(order.count, start + options.batch)]
                start += options.batch
                var g = gradient(train, rows: rows, classWeights: classWeights, threads: options.threads)
                step += 1
                let rate = options.learningRate * 0.5 * (1 + cosf(Float.pi * Float(step) / Float(totalSteps)))
                let c1 = 1 - powf(beta1, Float(step)), c2 = 1 - powf(beta2, Float(step))
                for j in parameters.indices {
                    g[j] += options.weightDecay * parameters[j]
                    first[j] = beta1 * first[j] + (1 - beta1) * g[j]
                    second[j] = beta2 * second[j] + (1 - beta2) * g[j] * g[j]
                    parameters[j] -= rate * (first[j] / c1) / ((second[j] / c2).squareRoot() + epsilon)
                }
            }
            let accuracy = validation.map { HeadTraining.accuracy(predict($0), $0.labels) }
            if let accuracy, accuracy > best.accuracy { best = (epoch, accuracy, parameters) }
            if !afterEpoch(epoch, accuracy) { break }
            if validation != nil && epoch - best.epoch >= options.patience { break }
        }
        if validation != nil { parameters = best.parameters }
        return (epoch, validation == nil ? epoch : best.epoch, validation == nil ? nil : best.accuracy)
    }
}
