// Vectorized transcendental functions for activations (SIMD16, no libm calls). Every multiply-add
// is written as `addingProduct` so it compiles to one FMA: Swift does not contract `a * b + c`.

/// e^x: range reduction x = n·ln2 + r with |r| ≤ ln2/2, a degree-5 minimax polynomial for e^r
/// (relative error 1.4e-7; with ln2 rounded to a float, r is off by up to 2.4e-7 at the range's
/// ends) and 2^n built in the exponent bits. Inputs are clamped to [-87.3, 88.3] (results saturate
/// to ~1e-38 / ~2e38 instead of 0 / inf; at 88.7, as before, n would round to 128, past the
/// largest exponent, and the result was infinite).
@_transparent
public func simdExp(_ x: SIMD16<Float>) -> SIMD16<Float> {
    let (p, scale) = simdExpParts(simdClamp(x, SIMD16(repeating: -87.3), SIMD16(repeating: 88.3)), sign: 1)
    return p * scale
}

/// e^(sign·x) for sign·x within [-87.3, 88.3], as a polynomial value and a power of two whose
/// product it is (sigmoid adds 1 in the same FMA). `sign` is ±1: for -1 the reduction and the
/// polynomial's odd coefficients absorb the negation, so e^-x costs no extra operation.
@_transparent
public func simdExpParts(_ x: SIMD16<Float>, sign: Float) -> (SIMD16<Float>, SIMD16<Float>) {
    // Round sign·x·log2(e) to the nearest integer (ties to even) with the 1.5·2^23 magic add: one
    // FMA instead of a scalarized `rounded`. The low mantissa bits of `biased` then hold n + 127.
    let magic = SIMD16<Float>(repeating: 12_582_912.0 + 127)
    let biased = magic.addingProduct(x, SIMD16(repeating: sign * 1.442_695_04))
    let n = biased - magic
    // s = x − sign·n·ln2 = sign·r, so e^r = p(sign·s): Horner in s with coefficient i times sign^i.
    let s = x.addingProduct(n, SIMD16(repeating: -sign * 0.693_147_18))
    var q = SIMD16<Float>(repeating: 0.041_915_383).addingProduct(SIMD16(repeating: sign * 0.008_297_655), s)
    q = SIMD16(repeating: sign * 0.166_675_75).addingProduct(q, s)
    q = SIMD16(repeating: 0.499_988_94).addingProduct(q, s)
    q = SIMD16(repeating: sign * 0.999_999_7).addingProduct(q, s)
    q = SIMD16(repeating: 1.000_000_1).addingProduct(q, s)
    // 2^n: shift n + 127 into the exponent.
    let bits = unsafeBitCast(biased, to: SIMD16<Int32>.self) &<< 23
    return (q, unsafeBitCast(bits, to: SIMD16<Float>.self))
}

/// 1 / (1 + e^-x). x is clamped to ±80 (the result is then within 2e-35 of 0 or 1), so the
/// denominator stays in [1, 6e34] where `simdReciprocalPositive` holds. The exponential's last
/// multiply and the 1 + are one FMA.
@_transparent
public func simdSigmoid(_ x: SIMD16<Float>) -> SIMD16<Float> {
    let (q, scale) = simdExpParts(simdClamp(x, SIMD16(repeating: -80), SIMD16(repeating: 80)), sign: -1)
    return simdReciprocalPositive(SIMD16<Float>(repeating: 1).addingProduct(q, scale))
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
public func f32_swish(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, count: Int) {
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
public func f32_sigmoid(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, count: Int) {
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
