/// Sum of `count` floats with four SIMD16 accumulators.
@inlinable
public func f32_reduce_sum(_ x: UnsafePointer<Float>, count: Int) -> Float {
    var a0 = SIMD16<Float>(), a1 = SIMD16<Float>()
    var i = 0
    let raw = UnsafeRawPointer(x)
    while i + 32 <= count {
        a0 += raw.loadUnaligned(fromByteOffset: i * 4, as: SIMD16<Float>.self)
        a1 += raw.loadUnaligned(fromByteOffset: i * 4 + 64, as: SIMD16<Float>.self)
        i += 32
    }
    var s = (a0 + a1).sum()
    while i < count { s += x[i]; i += 1 }
    return s
}

/// Maximum of `count` floats (−inf when empty).
@inlinable
public func f32_reduce_max(_ x: UnsafePointer<Float>, count: Int) -> Float {
    var m = SIMD16<Float>(repeating: -.infinity)
    var i = 0
    let raw = UnsafeRawPointer(x)
    while i + 16 <= count {
        m = simdMax(m, raw.loadUnaligned(fromByteOffset: i * 4, as: SIMD16<Float>.self))
        i += 16
    }
    var s = m.max()
    while i < count { s = max(s, x[i]); i += 1 }
    return s
}
