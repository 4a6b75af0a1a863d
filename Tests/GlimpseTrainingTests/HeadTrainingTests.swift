import Foundation
import GlimpseTestSupport
import XCTest
@testable import GlimpseTraining

final class HeadTrainingTests: XCTestCase {
    /// Gaussian blobs: class k centred at 3·e_k (plus noise) in `columns` dimensions, `perClass` rows each.
    func blobs(classes: Int, columns: Int, perClass: [Int], seed: UInt64, offset: Float = 5, scale: Float = 2) -> FeatureMatrix {
        var random = TestRandom(seed: seed)
        var m = FeatureMatrix(columns: columns)
        for k in 0..<classes {
            for _ in 0..<perClass[k] {
                let row = (0..<columns).map { j -> Float in
                    let centre: Float = j == k ? 3 : 0
                    return offset + scale * (centre + Float.random(in: -1...1, using: &random))
                }
                m.append(row, label: k)
            }
        }
        return m
    }

    func testGradientMatchesFiniteDifferences() {
        let m = blobs(classes: 3, columns: 5, perClass: [9, 4, 7], seed: 1, offset: 0, scale: 0.5)
        let model = SoftmaxRegression(classes: 3, columns: 5)
        var random = TestRandom(seed: 2)
        let theta = (0..<model.parameters.count).map { _ in Float.random(in: -0.5...0.5, using: &random) }
        let weights = HeadTraining.classWeights(m.labels, classes: 3, balance: true)
        let (_, gradient) = model.lossAndGradient(theta, data: m, classWeights: weights, l2: 0.1, threads: 1)
        for j in theta.indices {
            var plus = theta, minus = theta
            plus[j] += 1e-2
            minus[j] -= 1e-2
            let fp = model.lossAndGradient(plus, data: m, classWeights: weights, l2: 0.1, threads: 1).loss
            let fm = model.lossAndGradient(minus, data: m, classWeights: weights, l2: 0.1, threads: 1).loss
            let numeric = (fp - fm) / 2e-2
            XCTAssertEqual(Double(gradient[j]), numeric, accuracy: 2e-3 + 2e-2 * abs(numeric), "parameter \(j)")
        }
    }

    func testThreadedGradientEqualsSingleThreaded() {
        let m = blobs(classes: 4, columns: 37, perClass: [100, 90, 80, 70], seed: 3)
        let model = SoftmaxRegression(classes: 4, columns: 37)
        var random = TestRandom(seed: 4)
        let theta = (0..<model.parameters.count).map { _ in Float.random(in: -0.1...0.1, using: &random) }
        let w = [Float](repeating: 1, count: 4)
        let one = model.lossAndGradient(theta, data: m, classWeights: w, l2: 0.01, threads: 1)
        let four = model.lossAndGradient(theta, data: m, classWeights: w, l2: 0.01, threads: 4)
        XCTAssertEqual(one.loss, four.loss, accuracy: 1e-9 * max(1, abs(one.loss)))
        for j in theta.indices { XCTAssertEqual(one.gradient[j], four.gradient[j], accuracy: 1e-5 + 1e-4 * abs(one.gradient[j])) }
    }

    func testLBFGSFindsTheMinimumOfAQuadratic() {
        // f(x) = Σ (i + 1)·(x_i − i)², minimum at x_i = i.
        let n = 12
        let result = LBFGS(maxIterations: 200).minimize(from: [Float](repeating: 0, count: n), objective: { x in
            var f = 0.0
            var g = [Float](repeating: 0, count: n)
            for i in 0..<n {
                let d = Double(x[i]) - Double(i)
                f += Double(i + 1) * d * d
                g[i] = Float(2 * Double(i + 1) * d)
            }
            return (f, g)
        }, afterStep: { _, _, _ in true })
        for i in 0..<n { XCTAssertEqual(result.parameters[i], Float(i), accuracy: 1e-3) }
    }

    func testStandardizationFoldsIntoTheWeights() {
        let m = blobs(classes: 3, columns: 8, perClass: [20, 20, 20], seed: 5)
        let s = Standardizer(fitting: m)
        var model = SoftmaxRegression(classes: 3, columns: 8)
        var random = TestRandom(seed: 6)
        model.parameters = (0..<model.parameters.count).map { _ in Float.random(in: -1...1, using: &random) }
        let standardized = model.probabilities(s.apply(m))
        let folded = s.fold(weights: model.weights, bias: model.bias)
        var raw = SoftmaxRegression(classes: 3, columns: 8)
        raw.parameters = folded.weights + folded.bias
        let direct = raw.probabilities(m)
        for i in standardized.indices { XCTAssertEqual(standardized[i], direct[i], accuracy: 1e-4) }
    }

    func testTrainsSeparableClassesAndPicksTheBestL2() {
        let train = blobs(classes: 4, columns: 16, perClass: [200, 50, 120, 80], seed: 7)
        let validation = blobs(classes: 4, columns: 16, perClass: [40, 40, 40, 40], seed: 8)
        var options = HeadTraining.Options()
        options.l2 = [10, 0.01]
        options.threads = 2
        var steps = 0
        let result = HeadTraining.train(train, validation: validation, classes: 4, options: options) { _ in steps += 1 }
        XCTAssertGreaterThan(steps, 2)
        XCTAssertEqual(result.candidates.count, 2)
        let best = result.candidates.map { $0.accuracy ?? -1 }.max() ?? -1
        XCTAssertEqual(result.l2, result.candidates.first { $0.accuracy == best }?.l2, "the first of the best on validation: \(result.candidates)")
        XCTAssertGreaterThanOrEqual(result.validationAccuracy ?? 0, 0.95)
        var raw = SoftmaxRegression(classes: 4, columns: 16)
        raw.parameters = result.weights + result.bias
        XCTAssertEqual(HeadTraining.accuracy(raw.predict(validation), validation.labels), result.validationAccuracy ?? -1, accuracy: 1e-9,
                       "the folded head reads raw features and scores what training reported")
    }

    /// XOR of two coordinates: no linear head separates it; one hidden layer does.
    func testHiddenLayerLearnsWhatALinearHeadCannot() {
        func xor(_ n: Int, seed: UInt64) -> FeatureMatrix {
            var random = TestRandom(seed: seed)
            var m = FeatureMatrix(columns: 3)
            for _ in 0..<n {
                let a = Float.random(in: -1...1, using: &random), b = Float.random(in: -1...1, using: &random)
                m.append([a, b, Float.random(in: -0.1...0.1, using: &random)], label: (a > 0) == (b > 0) ? 0 : 1)
            }
            return m
        }
        let train = xor(600, seed: 11), validation = xor(200, seed: 12)
        var options = HeadTraining.Options()
        options.l2 = [0.001]
        let linear = HeadTraining.train(train, validation: validation, classes: 2, options: options)
        options.hidden = 16
        options.mlp.learningRate = 0.01
        options.mlp.epochs = 150
        options.mlp.patience = 150
        options.threads = 2
        let mlp = HeadTraining.train(train, validation: validation, classes: 2, options: options)
        XCTAssertLessThan(linear.validationAccuracy ?? 1, 0.75)
        XCTAssertGreaterThan(mlp.validationAccuracy ?? 0, 0.9)
        XCTAssertEqual(mlp.hiddenLayer?.bias.count, 16)
        XCTAssertEqual(HeadTraining.accuracy(HeadTraining.predict(mlp, validation), validation.labels), mlp.validationAccuracy ?? -1,
                       accuracy: 1e-9, "the folded layers read raw features and score what training reported")
    }

    func testHiddenLayerGradientMatchesFiniteDifferences() {
        let m = blobs(classes: 3, columns: 4, perClass: [5, 3, 4], seed: 13, offset: 0, scale: 0.5)
        let mlp = MLPHead(columns: 4, hidden: 5, classes: 3, seed: 14)
        let weights = HeadTraining.classWeights(m.labels, classes: 3, balance: true)
        let rows = Array(0..<m.rows)[...]
        let gradient = mlp.gradient(m, rows: rows, classWeights: weights, threads: 1)
        func loss(_ theta: [Float]) -> Double {
            var probe = mlp
            probe.parameters = theta
            var total = 0.0, weight = 0.0
            var h = [Float](repeating: 0, count: 5), p = [Float](repeating: 0, count: 3)
            theta.withUnsafeBufferPointer { t in
                m.values.withUnsafeBufferPointer { x in
                    for i in 0..<m.rows {
                        probe.forward(t.baseAddress!, x.baseAddress! + i * 4, h: &h, p: &p)
                        total -= Double(weights[m.labels[i]]) * log(Double(p[m.labels[i]]))
                        weight += Double(weights[m.labels[i]])
                    }
                }
            }
            return total / weight
        }
        let theta = mlp.parameters
        for j in theta.indices {
            var plus = theta, minus = theta
            plus[j] += 1e-2
            minus[j] -= 1e-2
            let numeric = (loss(plus) - loss(minus)) / 2e-2
            XCTAssertEqual(Double(gradient[j]), numeric, accuracy: 3e-3 + 3e-2 * abs(numeric), "parameter \(j)")
        }
    }

    func testBalancedClassWeights() {
        XCTAssertEqual(HeadTraining.classWeights([0, 0, 0, 1], classes: 3, balance: true), [4.0 / 9, 4.0 / 3, 0])
        XCTAssertEqual(HeadTraining.classWeights([0, 1], classes: 2, balance: false), [1, 1])
    }
}
