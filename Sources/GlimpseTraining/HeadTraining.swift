/// Trains a softmax classifier head on extracted features: standardized features, L-BFGS on the
/// weighted cross-entropy with L2, early stopping on a held-out split, and the L2 strength chosen
/// on that split from a list of candidates. The result reads raw features (the standardization is
/// folded into the weights), ready to become a `Gemm`.
public enum HeadTraining {
    public struct Options: Sendable {
        /// L2 strengths to try (λ of (λ/2)·‖W‖² on the mean loss); the best on the validation split
        /// wins. Without a validation split only the first is used.
        public var l2: [Float] = [0.1, 0.03, 0.01, 0.003, 0.001]
        public var maxIterations = 300
        /// Iterations without a better validation accuracy before stopping.
        public var patience = 30
        /// Weigh each class by n / (classes · n_class), so unbalanced folders train balanced.
        public var balanceClasses = true
        public var threads = 1
        public init() {}
    }

    public struct Progress: Sendable {
        public var l2: Float
        public var candidate: Int
        public var candidates: Int
        public var iteration: Int
        public var loss: Double
        /// Accuracy on the validation split (nil without one).
        public var validationAccuracy: Double?
    }

    public struct Result: Sendable {
        /// `[classes, columns]`, row-major, and `[classes]`, reading raw features.
        public var weights: [Float]
        public var bias: [Float]
        public var l2: Float
        public var iterations: Int
        public var bestIteration: Int
        public var trainAccuracy: Double
        public var validationAccuracy: Double?
        /// Validation accuracy of every L2 candidate tried, in order.
        public var candidates: [(l2: Float, accuracy: Double?)]
    }

    public static func train(_ train: FeatureMatrix, validation: FeatureMatrix?, classes: Int, options: Options = Options(),
                             progress: (Progress) -> Void = { _ in }) -> Result {
        let standardizer = Standardizer(fitting: train)
        let x = standardizer.apply(train)
        let v = validation.map(standardizer.apply)
        let weights = classWeights(train.labels, classes: classes, balance: options.balanceClasses)
        let lambdas = v == nil ? Array(options.l2.prefix(1)) : options.l2
        var best: (model: SoftmaxRegression, accuracy: Double?, l2: Float, iterations: Int, bestIteration: Int)?
        var tried: [(l2: Float, accuracy: Double?)] = []
        for (c, l2) in lambdas.enumerated() {
            var model = SoftmaxRegression(classes: classes, columns: train.columns)
            var bestParameters = model.parameters, bestAccuracy = -1.0, bestIteration = 0
            let run = LBFGS(maxIterations: options.maxIterations).minimize(from: model.parameters, objective: { theta in
                model.lossAndGradient(theta, data: x, classWeights: weights, l2: l2, threads: options.threads)
            }, afterStep: { iteration, loss, theta in
                var accuracy: Double?
                if let v {
                    var probe = model
                    probe.parameters = theta
                    let a = Self.accuracy(probe.predict(v), v.labels)
                    accuracy = a
                    if a > bestAccuracy { (bestAccuracy, bestParameters, bestIteration) = (a, theta, iteration) }
                }
                progress(Progress(l2: l2, candidate: c + 1, candidates: lambdas.count, iteration: iteration, loss: loss, validationAccuracy: accuracy))
                return v == nil || iteration - bestIteration < options.patience
            })
            model.parameters = v == nil ? run.parameters : bestParameters
            let accuracy = v == nil ? nil : Optional(bestAccuracy)
            tried.append((l2, accuracy))
            if best == nil || (accuracy ?? 0) > (best?.accuracy ?? 0) {
                best = (model, accuracy, l2, run.iterations, v == nil ? run.iterations : bestIteration)
            }
        }
        guard let best else { preconditionFailure("no L2 candidate") }
        let folded = standardizer.fold(weights: best.model.weights, bias: best.model.bias)
        return Result(weights: folded.weights, bias: folded.bias, l2: best.l2, iterations: best.iterations, bestIteration: best.bestIteration,
                      trainAccuracy: accuracy(best.model.predict(x), x.labels), validationAccuracy: best.accuracy, candidates: tried)
    }

    /// n / (classes · n_k) for each class present, 0 for a class without examples.
    public static func classWeights(_ labels: [Int], classes: Int, balance: Bool) -> [Float] {
        guard balance else { return [Float](repeating: 1, count: classes) }
        var counts = [Int](repeating: 0, count: classes)
        for y in labels { counts[y] += 1 }
        return counts.map { $0 == 0 ? 0 : Float(labels.count) / Float(classes * $0) }
    }

    public static func accuracy(_ predicted: [Int], _ truth: [Int]) -> Double {
        guard !truth.isEmpty else { return 0 }
        return Double(zip(predicted, truth).filter { $0 == $1 }.count) / Double(truth.count)
    }
}
