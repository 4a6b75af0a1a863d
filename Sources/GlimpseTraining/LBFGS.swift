/// Limited-memory BFGS (Nocedal & Wright, algorithm 7.4: the two-loop recursion) with a
/// backtracking line search that asks for sufficient decrease (Armijo). Suited to the smooth,
/// convex objective of a softmax classifier over a few thousand examples, where every step sees
/// the whole training set.
public struct LBFGS: Sendable {
    /// Correction pairs kept.
    public var memory = 10
    public var maxIterations = 500
    /// Stops when the objective improves by less than this, relative to its size, in one step.
    public var tolerance = 1e-7

    public init(maxIterations: Int = 500) { self.maxIterations = maxIterations }

    /// Minimizes `objective` (value and gradient) from `start`. After each iteration `afterStep`
    /// gets (iteration, value, parameters) and returns false to stop early. Returns the last
    /// parameters and the number of iterations run.
    public func minimize(from start: [Float], objective: ([Float]) -> (Double, [Float]),
                         afterStep: (Int, Double, [Float]) -> Bool) -> (parameters: [Float], iterations: Int) {
        var x = start
        var (f, g) = objective(x)
        var pairs: [(s: [Float], y: [Float], rho: Double)] = []
        var iteration = 0
        while iteration < maxIterations {
            iteration += 1
            let d = direction(g, pairs: pairs)
            let slope = Self.dot(g, d)
            guard slope < 0 else { break }
            var step = pairs.isEmpty ? min(1, 1 / max(1e-12, Self.dot(g, g).squareRoot())) : 1
            var trial = x, trialF = f, trialG = g, accepted = false
            for _ in 0..<40 {
                trial = zip(x, d).map { $0 + Float(step) * $1 }
                (trialF, trialG) = objective(trial)
                if trialF <= f + 1e-4 * step * slope { accepted = true; break }
                step *= 0.5
            }
            guard accepted else { break }
            let s = zip(trial, x).map { $0 - $1 }, y = zip(trialG, g).map { $0 - $1 }
            let sy = Self.dot(s, y)
            if sy > 1e-12 {
                pairs.append((s, y, 1 / sy))
                if pairs.count > memory { pairs.removeFirst() }
            }
            let improvement = f - trialF
            (x, f, g) = (trial, trialF, trialG)
            if !afterStep(iteration, f, x) { break }
            if improvement <= tolerance * max(1, abs(f)) { break }
        }
        return (x, iteration)
    }

    /// −H·g by the two-loop recursion, scaled by s·y / y·y of the newest pair.
    func direction(_ g: [Float], pairs: [(s: [Float], y: [Float], rho: Double)]) -> [Float] {
        var q = g.map(Double.init)
        var alphas = [Double](repeating: 0, count: pairs.count)
        for i in pairs.indices.reversed() {
            let a = pairs[i].rho * Self.dot(pairs[i].s, q)
            alphas[i] = a
            for j in q.indices { q[j] -= a * Double(pairs[i].y[j]) }
        }
        if let last = pairs.last {
            let gamma = Self.dot(last.s, last.y) / max(1e-30, Self.dot(last.y, last.y))
            for j in q.indices { q[j] *= gamma }
        }
        for i in pairs.indices {
            let b = pairs[i].rho * Self.dot(pairs[i].y, q)
            for j in q.indices { q[j] += Double(pairs[i].s[j]) * (alphas[i] - b) }
        }
        return q.map { Float(-$0) }
    }

    static func dot(_ a: [Float], _ b: [Float]) -> Double {
        var s = 0.0
        for i in a.indices { s += Double(a[i]) * Double(b[i]) }
        return s
    }

    static func dot(_ a: [Float], _ b: [Double]) -> Double {
        var s = 0.0
        for i in a.indices { s += Double(a[i]) * b[i] }
        return s
    }
}
