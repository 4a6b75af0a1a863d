// Vectorized transcendental functions for activations (SIMD16, no libm calls). Every multiply-add
// is written as `addingProduct` so it compiles to one FMA: Swift does not contract `a * b + c`.

/// e^x: range reduction x = n·ln2 + r with |r| ≤ ln2/2, a degree-6 polynomial for e^r (relative
/// error ≈ 2e-7) and 2^n built in the exponent bits. Inputs are clamped to [-87.3, 88.7] (results
/// saturate to ~1e-38 / ~3e38 instead of 0 / inf).
@_transparent
public func simdExp(_ x: SIMD16<Float>) -> SIMD16<Float> {
    simdExpInRange(simdClamp(x, SIMD16(repeating: -87.3), SIMD16(repeating: 88.7)))
}

/// e^x for x already within [-87.3, 88.7] (see `simdExp`).
@_transparent
public func simdExpInRange(_ x: SIMD16<Float>) -> SIMD16<Float> {
    // Round x·log2(e) to the nearest integer (ties to even) with the 1.5·2^23 magic add: one FMA
    // instead of a scalarized `rounded`. The low mantissa bits of `biased` then hold n + 127.
    let magic = SIMD16<Float>(repeating: 12_582_912.0 + 127)
    let biased = magic.addingProduct(x, SIMD16(repeating: 1.442_695_04))
    let n = biased - magic
    var r = x.addingProduct(n, SIMD16(repeating: -0.693_145_75))
    r = r.addingProduct(n, SIMD16(repeating: -1.428_606_8e-6))
    var p = SIMD16<Float>(repeating: 1.0 / 120).addingProduct(SIMD16(repeating: 1.0 / 720), r)
    p = SIMD16(repeating: 1.0 / 24).addingProduct(p, r)
    p = SIMD16(repeating: 1.0 / 6).addingProduct(p, r)
    p = SIMD16(repeating: 0.5).addingProduct(p, r)
    p = SIMD16(repeating: 1).addingProduct(p, r)
    p = SIMD16(repeating: 1).addingProduct(p, r)
    // 2^n: shift n + 127 into the exponent.
    let bits = unsafeBitCast(biased, to: SIMD16<Int32>.self) &<< 23
    return p * unsafeBitCast(bits, to: SIMD16<Float>.self)
}

/// 1 / (1 + e^-x). The argument of the exponential is clamped to ±80 (the result is then within
/// 2e-35 of 0 or 1), so the denominator stays in [1, 6e34] where `simdReciprocalPositive` holds.
@_transparent
public func simdSigmoid(_ x: SIMD16<Float>) -> SIMD16<Float> {
    simdReciprocalPositive(1 + simdExpInRange(simdClamp(-x, SIMD16(repeating: -80), SIMD16(repeating: 80))))
}

/// 1 / d for positive normal d up to about 1e37, without `vdivps` (a zmm division issues once per
/// 16 cycles on this CPU, more than the whole swish epilogue around it): an exponent-flip first
/// guess (relative error < 13 %) refined by three Newton steps y ← y·(2 − d·y), each squaring the
/// error (1.6e-2, 2.6e-4, 7e-8, then float rounding): one FMA and one multiply each.
@_transparent
public func simdReciprocalPositive(_ d: SIMD16<Float>) -> SIMD16<Float> {
    let guess = SIMD16<Int32>(repeating: 0x7EF3_11C7) &- unsafeBitCast(d, to: SIMD16<Int32>.self)
    var y = unsafeBitCast(guess, to: SIMD16<Float>.self)
    let two = SIMD16<Float>(repeating: 2), minusD = -d
    y = y * two.addingProduct(minusD, y)
    y = y * two.addingProduct(minusD, y)
    y = y * two.addingProduct(minusD, y)
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
