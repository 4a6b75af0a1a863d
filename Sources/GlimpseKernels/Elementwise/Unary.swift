import Foundation

/// Element-wise activations. Each maps `count` floats from `x` to `y` (which may alias).
public enum UnaryKind: Sendable, Equatable {
    case relu
    case clip(Float, Float)
    case sigmoid
    case hardSigmoid(alpha: Float, beta: Float)
    case hardSwish
    case swish
    case tanh
    case exp
    case neg
    case abs
    case sqrt
    case reciprocal
    case leakyRelu(Float)
    case identity
}

/// Applies `kind` element-wise, SIMD16 over the bulk.
public func f32_unary(_ kind: UnaryKind, _ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, count: Int) {
    switch kind {
    case .relu: f32_clamp(x, y, count: count, lower: 0, upper: .infinity)
    case .clip(let lo, let hi): f32_clamp(x, y, count: count, lower: lo, upper: hi)
    case .identity: if UnsafePointer(y) != x { y.update(from: x, count: count) }
    case .sigmoid: f32_sigmoid(x, y, count: count)
    case .swish: f32_swish(x, y, count: count)
    case .hardSigmoid(let a, let b): for i in 0..<count { y[i] = min(max(a * x[i] + b, 0), 1) }
    case .hardSwish: for i in 0..<count { let v = x[i]; y[i] = v * min(max(v / 6 + 0.5, 0), 1) }
    case .tanh: for i in 0..<count { y[i] = Foundation.tanh(x[i]) }
    case .exp: for i in 0..<count { y[i] = Foundation.exp(x[i]) }
    case .neg: for i in 0..<count { y[i] = -x[i] }
    case .abs: for i in 0..<count { y[i] = Swift.abs(x[i]) }
    case .sqrt: for i in 0..<count { y[i] = x[i].squareRoot() }
    case .reciprocal: for i in 0..<count { y[i] = 1 / x[i] }
    case .leakyRelu(let a): for i in 0..<count { let v = x[i]; y[i] = v < 0 ? a * v : v }
    }
}

@inline(__always)
func sigmoid(_ v: Float) -> Float { 1 / (1 + Foundation.exp(-v)) }

/// y = min(max(x, lower), upper).
public func f32_clamp(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, count: Int, lower: Float, upper: Float) {
    let lo = SIMD16<Float>(repeating: lower), hi = SIMD16<Float>(repeating: upper)
    var i = 0
    while i + 16 <= count {
        var v = UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self)
        v = simdClamp(v, lo, hi)
        UnsafeMutableRawPointer(y + i).storeBytes(of: v, as: SIMD16<Float>.self)
        i += 16
    }
    while i < count { y[i] = min(max(x[i], lower), upper); i += 1 }
}
