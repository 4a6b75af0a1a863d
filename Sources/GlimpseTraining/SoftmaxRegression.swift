import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Multinomial logistic regression: p = softmax(W·x + b), trained by minimizing the weighted mean
/// cross-entropy plus (λ/2)·‖W‖² (the bias is not penalized). Parameters are one flat vector,
/// `[W (classes × columns, row-major), b (classes)]`, as the optimizers see them.
public struct SoftmaxRegression: Sendable {
    public let classes: Int
    public let columns: Int
    public var parameters: [Float]

    public init(classes: Int, columns: Int) {
        precondition(classes >= 2 && columns >= 1, "a softmax classifier needs two classes and one feature")
        self.classes = classes
        self.columns = columns
        parameters = [Float](repeating: 0, count: classes * columns + classes)
    }

    public var weights: [Float] { Array(parameters[0..<classes * columns]) }
    public var bias: [Float] { Array(parameters[(classes * columns)...]) }

    /// Class probabilities of every row, `[rows, classes]`.
    public func probabilities(_ m: FeatureMatrix) -> [Float] {
        var out = [Float](repeating: 0, count: m.rows * classes)
        parameters.withUnsafeBufferPointer { theta in
            m.values.withUnsafeBufferPointer { x in
                out.withUnsafeMutableBufferPointer { p in
                    for i in 0..<m.rows { Self.softmaxRow(theta, x.baseAddress! + i * columns, classes: classes, columns: columns, into: p.baseAddress! + i * classes) }
                }
            }
        }
        return out
    }

    /// The most probable class of every row.
    public func predict(_ m: FeatureMatrix) -> [Int] {
        let p = probabilities(m)
        return (0..<m.rows).map { i in
            var best = 0
            for k in 1..<classes where p[i * classes + k] > p[i * classes + best] { best = k }
            return best
        }
    }

    /// The objective and its gradient at `theta`. `classWeights[k]` weighs the examples of class k;
    /// rows are split over `threads` chunks that run side by side.
    public func lossAndGradient(_ theta: [Float], data m: FeatureMatrix, classWeights: [Float], l2: Float,
                                threads: Int) -> (loss: Double, gradient: [Float]) {
        let chunks = max(1, min(threads, m.rows / 64))
        let partials = Partials(count: chunks, size: theta.count)
        let (classes, columns) = (self.classes, self.columns)
        theta.withUnsafeBufferPointer { t in
            m.values.withUnsafeBufferPointer { x in
                DispatchQueue.concurrentPerform(iterations: chunks) { c in
                    let lo = m.rows * c / chunks, hi = m.rows * (c + 1) / chunks
                    var probs = [Float](repeating: 0, count: classes)
                    var gradient = [Float](repeating: 0, count: t.count)
                    var loss = 0.0, weight = 0.0
                    probs.withUnsafeMutableBufferPointer { p in
                        gradient.withUnsafeMutableBufferPointer { g in
                            for i in lo..<hi {
                                let row = x.baseAddress! + i * columns
                                Self.softmaxRow(t, row, classes: classes, columns: columns, into: p.baseAddress!)
                                let y = m.labels[i], w = classWeights[y]
                                loss -= Double(w) * log(Double(max(p[y], 1e-30)))
                                weight += Double(w)
                                for k in 0..<classes {
                                    let r = w * (p[k] - (k == y ? 1 : 0))
                                    Vector.axpy(r, row, g.baseAddress! + k * columns, count: columns)
                                    g[classes * columns + k] += r
                                }
                            }
                        }
                    }
                    partials.store(c, loss: loss, weight: weight, gradient: gradient)
                }
            }
        }
        var (loss, weight, gradient) = partials.sum()
        let scale = weight > 0 ? Float(1 / weight) : 0
        var penalty = 0.0
        for j in 0..<gradient.count {
            gradient[j] *= scale
            if j < classes * columns {
                gradient[j] += l2 * theta[j]
                penalty += Double(theta[j]) * Double(theta[j])
            }
        }
        loss = (weight > 0 ? loss / weight : 0) + 0.5 * Double(l2) * penalty
        return (loss, gradient)
    }

    /// Softmax of one row's logits into `out` (the max is subtracted first).
    static func softmaxRow(_ theta: UnsafeBufferPointer<Float>, _ x: UnsafePointer<Float>, classes: Int, columns: Int,
                           into out: UnsafeMutablePointer<Float>) {
        for k in 0..<classes { out[k] = Vector.dot(theta.baseAddress! + k * columns, x, count: columns) + theta[classes * columns + k] }
        Vector.softmax(out, count: classes)
    }
}

/// Per-chunk loss, weight and gradient, written by concurrent chunks (each only its own slot, in
/// storage allocated up front) and summed afterwards.
private final class Partials: @unchecked Sendable {
    private let count: Int
    private let size: Int
    private let scalars: UnsafeMutablePointer<Double>
    private let gradients: UnsafeMutablePointer<Float>

    init(count: Int, size: Int) {
        self.count = count
        self.size = size
        scalars = .allocate(capacity: 2 * count)
        scalars.initialize(repeating: 0, count: 2 * count)
        gradients = .allocate(capacity: count * size)
        gradients.initialize(repeating: 0, count: count * size)
    }

    deinit {
        scalars.deallocate()
        gradients.deallocate()
    }

    func store(_ c: Int, loss: Double, weight: Double, gradient: [Float]) {
        scalars[2 * c] = loss
        scalars[2 * c + 1] = weight
        gradient.withUnsafeBufferPointer { (gradients + c * size).update(from: $0.baseAddress!, count: size) }
    }

    func sum() -> (Double, Double, [Float]) {
        var g = [Float](repeating: 0, count: size)
        var loss = 0.0, weight = 0.0
        for c in 0..<count {
            loss += scalars[2 * c]
            weight += scalars[2 * c + 1]
            for j in 0..<size { g[j] += gradients[c * size + j] }
        }
        return (loss, weight, g)
    }
}
