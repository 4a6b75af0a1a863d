#if GLIMPSE_VNNI
import CGlimpseSIMD
#endif

// Lane conversions for the int8 kernels. The standard library's generic SIMD16 conversions
// (`init(_:rounding:)`, `init(truncatingIfNeeded:)`) are calls into unspecialized code per vector;
// on AVX-512 targets these are single instructions from CGlimpseSIMD.

@inlinable @inline(__always)
public func simdFloat(_ v: SIMD16<Int32>) -> SIMD16<Float> {
#if GLIMPSE_VNNI
    return glimpse_cvt_i32_f32_512(unsafeBitCast(v, to: SIMD8<Int64>.self))
#else
    return SIMD16<Float>(v)
#endif
}

/// Rounds half to even; lanes must be within the int32 range (clamp first).
@inlinable @inline(__always)
public func simdRoundToInt32(_ v: SIMD16<Float>) -> SIMD16<Int32> {
#if GLIMPSE_VNNI
    return unsafeBitCast(glimpse_cvt_f32_i32_even_512(v), to: SIMD16<Int32>.self)
#else
    return SIMD16<Int32>(v.rounded(.toNearestOrEven), rounding: .towardZero)
#endif
}

/// The low byte of each lane.
@inlinable @inline(__always)
public func simdNarrowU8(_ v: SIMD16<Int32>) -> SIMD16<UInt8> {
#if GLIMPSE_VNNI
    return unsafeBitCast(glimpse_narrow_i32_u8_512(unsafeBitCast(v, to: SIMD8<Int64>.self)), to: SIMD16<UInt8>.self)
#else
    return SIMD16<UInt8>(truncatingIfNeeded: v)
#endif
}

/// Sixteen bytes at `p`, zero-extended.
@inlinable @inline(__always)
public func simdLoadU8(_ p: UnsafeRawPointer) -> SIMD16<Int32> {
#if GLIMPSE_VNNI
    return unsafeBitCast(glimpse_load_u8_i32_512(p), to: SIMD16<Int32>.self)
#else
    return SIMD16<Int32>(truncatingIfNeeded: p.loadUnaligned(as: SIMD16<UInt8>.self))
#endif
}

/// Clamps finite lanes to [lower, upper] (requantization, where no lane is NaN).
@inlinable @inline(__always)
public func simdClampFinite(_ v: SIMD16<Float>, _ lower: SIMD16<Float>, _ upper: SIMD16<Float>) -> SIMD16<Float> {
#if GLIMPSE_VNNI
    return glimpse_clamp_f32_512(v, lower, upper)
#else
    return simdClamp(v, lower, upper)
#endif
}
