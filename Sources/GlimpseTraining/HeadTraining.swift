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
        /// Units of a hidden layer (ReLU); 0 for a linear head. A hidden layer is trained by Adam
        /// (`mlp`) instead of L-BFGS, with `mlp.weightDecay` in place of the L2 candidates.
        public var hidden = 0
        public var mlp = MLPHead.Options()
        public init() {}
    }

    public struct Progress: Sendable {
        public var l2: Float
        public var candidate: Int
        public var candidates: Int
        public var iteration: Int
        public var loss: Double
        /// NaN for the hidden-layer head, which reports epochs in `iteration`.
        /// Accuracy on the validation split (nil without one).
        public var validationAccuracy: Double?
    }

    public struct Result: Sendable {
        /// The hidden layer, `[hidden, columns]` and `[hidden]`, reading raw features (nil for a linear head).
        public var hiddenLayer: (weights: [Float], bias: [Float])?
        /// The output layer: `[classes, columns or hidden]`, row-major, and `[classes]` (reading raw
        /// features when there is no hidden layer).
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
        if options.hidden > 0 {
            return trainHidden(x, validation: v, classes: classes, classWeights: weights, standardizer: standardizer,
                               options: options, progress: progress)
        }
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
        return Result(hiddenLayer: nil, weights: folded.weights, bias: folded.bias, l2: best.l2, iterations: best.iterations, bestIteration: best.bestIteration,
                      trainAccuracy: accuracy(best.model.predict(x), x.labels), validationAccuracy: best.accuracy, candidates: tried)
    }

    static func trainHidden(_ x: FeatureMatrix, validation v: FeatureMatrix?, classes: Int, classWeights: [Float],
                            standardizer: Standardizer, options: Options, progress: (Progress) -> Void) -> Result {
        var mlp = MLPHead(columns: x.columns, hidden: options.hidden, classes: classes, seed: options.mlp.seed)
        var mlpOptions = options.mlp
        mlpOptions.threads = options.threads
        let run = mlp.train(x, validation: v, classWeights: classWeights, options: mlpOptions) { epoch, accuracy in
            progress(Progress(l2: mlpOptions.weightDecay, candidate: 1, candidates: 1, iteration: epoch, loss: .nan, validationAccuracy: accuracy))
            return true
        }
        let first = standardizer.fold(weights: mlp.layer1.weights, bias: mlp.layer1.bias)
        let second = mlp.layer2
        return Result(hiddenLayer: (first.weights, first.bias), weights: second.weights, bias: second.bias, l2: mlpOptions.weightDecay,
                      iterations: run.epochs, bestIteration: run.bestEpoch, trainAccuracy: accuracy(mlp.predict(x), x.labels),
                      validationAccuracy: run.accuracy, candidates: [(mlpOptions.weightDecay, run.accuracy)])
    }

    /// n / (classes · n_k) for each class present, 0 for a class without examples.
    public static func classWeights(_ labels: [Int], classes: Int, balance: Bool) -> [Float] {
        guard balance else { return [Float](repeating: 1, count: classes) }
        var counts = [Int](repeating: 0, count: classes)
        for y in labels { counts[y] += 1 }
        return counts.map { $0 == 0 ? 0 : Float(labels.count) / Float(classes * $0) }
    }

    /// The class a trained head picks for each row of raw features.
    public static func predict(_ result: Result, _ m: FeatureMatrix) -> [Int] {
        let classes = result.bias.count
        guard let hidden = result.hiddenLayer else {
            var head = SoftmaxRegression(classes: classes, columns: m.columns)
            head.parameters = result.weights + result.bias
            return head.predict(m)
        }
        var mlp = MLPHead(columns: m.columns, hidden: hidden.bias.count, classes: classes, seed: 0)
        mlp.parameters = hidden.weights + hidden.bias + result.weights + result.bias
        return mlp.predict(m)
    }

    public static func accuracy(_ predicted: [Int], _ truth: [Int]) -> Double {
        guard !truth.isEmpty else { return 0 }
        return Double(zip(predicted, truth).filter { $0 == $1 }.count) / Double(truth.count)
    }
}
