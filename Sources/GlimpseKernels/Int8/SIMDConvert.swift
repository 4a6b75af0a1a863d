#if GLIMPSE_VNNI || GLIMPSE_AVX2
import CGlimpseSIMD
#endif

// Lane conversions for the int8 kernels. The standard library's generic SIMD16 conversions
// (`init(_:rounding:)`, `init(truncatingIfNeeded:)`) are calls into unspecialized code per vector;
// on AVX-512 targets these are single instructions from CGlimpseSIMD, on AVX2 targets two (one per
// 256-bit half).

#if !GLIMPSE_VNNI && GLIMPSE_AVX2
/// The two 256-bit halves of sixteen 32-bit lanes, as the C shim takes them.
@inlinable @inline(__always)
func avx2Halves(_ v: SIMD16<Int32>) -> (SIMD4<Int64>, SIMD4<Int64>) {
    (unsafeBitCast(v.lowHalf, to: SIMD4<Int64>.self), unsafeBitCast(v.highHalf, to: SIMD4<Int64>.self))
}

@inlinable @inline(__always)
func avx2Join(_ lo: SIMD4<Int64>, _ hi: SIMD4<Int64>) -> SIMD16<Int32> {
    SIMD16<Int32>(lowHalf: unsafeBitCast(lo, to: SIMD8<Int32>.self), highHalf: unsafeBitCast(hi, to: SIMD8<Int32>.self))
}
#endif

@inlinable @inline(__always)
public func simdFloat(_ v: SIMD16<Int32>) -> SIMD16<Float> {
#if GLIMPSE_VNNI
    return glimpse_cvt_i32_f32_512(unsafeBitCast(v, to: SIMD8<Int64>.self))
#elseif GLIMPSE_AVX2
    let (lo, hi) = avx2Halves(v)
    return SIMD16<Float>(lowHalf: glimpse_cvt_i32_f32_256(lo), highHalf: glimpse_cvt_i32_f32_256(hi))
#else
    return SIMD16<Float>(v)
#endif
}

/// Rounds half to even; lanes must be within the int32 range (clamp first).
@inlinable @inline(__always)
public func simdRoundToInt32(_ v: SIMD16<Float>) -> SIMD16<Int32> {
#if GLIMPSE_VNNI
    return unsafeBitCast(glimpse_cvt_f32_i32_even_512(v), to: SIMD16<Int32>.self)
#elseif GLIMPSE_AVX2
    return avx2Join(glimpse_cvt_f32_i32_even_256(v.lowHalf), glimpse_cvt_f32_i32_even_256(v.highHalf))
#else
    return SIMD16<Int32>(v.rounded(.toNearestOrEven), rounding: .towardZero)
#endif
}

/// The low byte of each lane.
@inlinable @inline(__always)
public func simdNarrowU8(_ v: SIMD16<Int32>) -> SIMD16<UInt8> {
#if GLIMPSE_VNNI
    return unsafeBitCast(glimpse_narrow_i32_u8_512(unsafeBitCast(v, to: SIMD8<Int64>.self)), to: SIMD16<UInt8>.self)
#elseif GLIMPSE_AVX2
    let (lo, hi) = avx2Halves(v)
    return unsafeBitCast(glimpse_narrow_i32_u8_2x256(lo, hi), to: SIMD16<UInt8>.self)
#else
    return SIMD16<UInt8>(truncatingIfNeeded: v)
#endif
}

/// Sixteen bytes at `p`, zero-extended.
@inlinable @inline(__always)
public func simdLoadU8(_ p: UnsafeRawPointer) -> SIMD16<Int32> {
#if GLIMPSE_VNNI
    return unsafeBitCast(glimpse_load_u8_i32_512(p), to: SIMD16<Int32>.self)
#elseif GLIMPSE_AVX2
    return avx2Join(glimpse_load_u8_i32_256(p), glimpse_load_u8_i32_256(p + 8))
#else
    return SIMD16<Int32>(truncatingIfNeeded: p.loadUnaligned(as: SIMD16<UInt8>.self))
#endif
}

/// Clamps finite lanes to [lower, upper] (requantization, where no lane is NaN).
@inlinable @inline(__always)
public func simdClampFinite(_ v: SIMD16<Float>, _ lower: SIMD16<Float>, _ upper: SIMD16<Float>) -> SIMD16<Float> {
#if GLIMPSE_VNNI
    return glimpse_clamp_f32_512(v, lower, upper)
#elseif GLIMPSE_AVX2
    return SIMD16<Float>(lowHalf: glimpse_clamp_f32_256(v.lowHalf, lower.lowHalf, upper.lowHalf),
                         highHalf: glimpse_clamp_f32_256(v.highHalf, lower.highHalf, upper.highHalf))
#else
    return simdClamp(v, lower, upper)
#endif
}
