/// Element-wise binary kernels for one broadcast row: `a`/`b` advance by `sa`/`sb` ∈ {0, 1}.
public enum BinaryKind: Sendable {
    case add, sub, mul, div, max, min
}

@inline(__always)
func apply(_ k: BinaryKind, _ x: SIMD16<Float>, _ y: SIMD16<Float>) -> SIMD16<Float> {
    switch k {
    case .add: return x + y
    case .sub: return x - y
    case .mul: return x * y
    case .div: return x / y
    case .max: return simdMax(x, y)
    case .min: return simdMin(x, y)
    }
}

@inline(__always)
func load16(_ p: UnsafePointer<Float>, _ step: Int, _ i: Int) -> SIMD16<Float> {
    step == 0 ? SIMD16(repeating: p[0]) : UnsafeRawPointer(p + i).loadUnaligned(as: SIMD16<Float>.self)
}

/// o[i] = clamp(a[i·sa] ⊕ b[i·sb], lo, hi) for i in 0..<n.
public func f32_binary_row(_ k: BinaryKind, _ a: UnsafePointer<Float>, _ sa: Int, _ b: UnsafePointer<Float>, _ sb: Int,
                           _ o: UnsafeMutablePointer<Float>, _ n: Int, lower: Float, upper: Float) {
    let lo = SIMD16<Float>(repeating: lower), hi = SIMD16<Float>(repeating: upper)
    let clamp = lower != -.infinity || upper != .infinity
    @inline(__always) func loop(_ k: BinaryKind) {
        var i = 0
        while i + 16 <= n {
            var v = apply(k, load16(a, sa, i), load16(b, sb, i))
            if clamp { v = simdClamp(v, lo, hi) }
            UnsafeMutableRawPointer(o + i).storeBytes(of: v, as: SIMD16<Float>.self)
            i += 16
        }
        while i < n {
            var v = apply(k, SIMD16(repeating: a[i * sa]), SIMD16(repeating: b[i * sb]))
            if clamp { v = simdClamp(v, lo, hi) }
            o[i] = v[0]
            i += 1
        }
    }
    switch k {
    case .add: loop(.add)
    case .sub: loop(.sub)
    case .mul: loop(.mul)
    case .div: loop(.div)
    case .max: loop(.max)
    case .min: loop(.min)
    }
}
