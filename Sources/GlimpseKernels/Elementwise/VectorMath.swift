/// Vectorized transcendental functions for activations (SIMD16, no libm calls).
///
/// `simdExp`: range reduction x = n·ln2 + r with |r| ≤ ln2/2, a degree-6 polynomial for e^r
/// (relative error ≈ 2e-7) and 2^n built in the exponent bits. Inputs are clamped to
/// [-87.3, 88.7] (results saturate to ~1e-38 / ~3e38 instead of 0 / inf).
@_transparent
public func simdExp(_ x0: SIMD16<Float>) -> SIMD16<Float> {
    let x = simdClamp(x0, SIMD16(repeating: -87.3), SIMD16(repeating: 88.7))
    // Round x·log2(e) to the nearest integer (ties to even) with the 1.5·2^23 magic add: one vaddps
    // instead of a scalarized `rounded`. The low mantissa bits of `biased` then hold n + 127.
    let biased = x * 1.442_695_04 + (12_582_912.0 + 127)
    let n = biased - (12_582_912.0 + 127)
    var r = x - n * 0.693_145_75
    r = r - n * 1.428_606_8e-6
    var p = SIMD16<Float>(repeating: 1.0 / 720)
    p = p * r + 1.0 / 120
    p = p * r + 1.0 / 24
    p = p * r + 1.0 / 6
    p = p * r + 0.5
    p = p * r + 1
    p = p * r + 1
    // 2^n: shift n + 127 into the exponent.
    let bits = unsafeBitCast(biased, to: SIMD16<Int32>.self) &<< 23
    return p * unsafeBitCast(bits, to: SIMD16<Float>.self)
}

/// 1 / (1 + e^-x). The argument of the exponential is clamped to ±80 (the result is then within
/// 2e-35 of 0 or 1), so the denominator stays in [1, 6e34] where `simdReciprocalPositive` holds.
@_transparent
public func simdSigmoid(_ x: SIMD16<Float>) -> SIMD16<Float> {
    simdReciprocalPositive(1 + simdExp(simdClamp(-x, SIMD16(repeating: -80), SIMD16(repeating: 80))))
}

/// 1 / d for positive normal d up to about 1e37, without `vdivps` (a zmm division issues once per
/// 16 cycles on this CPU, more than the whole swish epilogue around it): an exponent-flip first
/// guess (relative error < 13 %) refined by three Newton steps y ← y·(2 − d·y), each squaring the
/// error (1.6e-2, 2.6e-4, 7e-8, then float rounding).
@_transparent
public func simdReciprocalPositive(_ d: SIMD16<Float>) -> SIMD16<Float> {
    let guess = SIMD16<Int32>(repeating: 0x7EF3_11C7) &- unsafeBitCast(d, to: SIMD16<Int32>.self)
    var y = unsafeBitCast(guess, to: SIMD16<Float>.self)
    y = y * (2 - d * y)
    y = y * (2 - d * y)
    y = y * (2 - d * y)
    return y
}

/// y = x·sigmoid(x) (SiLU / swish), SIMD16 with a scalar tail.
public func swish_f32(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, count: Int) {
    var i = 0
    while i + 16 <= count {
        let v = UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self)
        UnsafeMutableRawPointer(y + i).storeBytes(of: v * simdSigmoid(v), as: SIMD16<Float>.self)
        i += 16
    }
    if i < count {
        var v = SIMD16<Float>()
        for j in 0..<(count - i) { v[j] = x[i + j] }
        let r = v * simdSigmoid(v)
        for j in 0..<(count - i) { y[i + j] = r[j] }
    }
}

/// y = sigmoid(x), SIMD16 with a scalar tail.
public func sigmoid_f32(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, count: Int) {
    var i = 0
    while i + 16 <= count {
        let v = UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self)
        UnsafeMutableRawPointer(y + i).storeBytes(of: simdSigmoid(v), as: SIMD16<Float>.self)
        i += 16
    }
    if i < count {
        var v = SIMD16<Float>()
        for j in 0..<(count - i) { v[j] = x[i + j] }
        let r = simdSigmoid(v)
        for j in 0..<(count - i) { y[i + j] = r[j] }
    }
}
