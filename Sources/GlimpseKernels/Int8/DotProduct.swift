#if GLIMPSE_VNNI || GLIMPSE_AVX2
import CGlimpseSIMD
#endif

/// u8 × s8 → s32 dot products of four bytes per 32-bit lane, added to `acc`: lane j gains
/// Σ_{i<4} u8[4j+i] · s8[4j+i], bytes taken from the lanes' little-endian bytes. This is `vpdpbusd`
/// where the target has AVX-512 VNNI (`GLIMPSE_VNNI`); on AVX2 targets the exact split form of
/// `vpmaddubsw` + `vpmaddwd` per 256-bit half (`glimpse_dpbusd_split_256`: no pair sum saturates); an
/// exact portable sequence elsewhere.
@inlinable @inline(__always)
public func dpbusd(_ acc: SIMD16<Int32>, _ u8: SIMD16<Int32>, _ s8: SIMD16<Int32>) -> SIMD16<Int32> {
#if GLIMPSE_VNNI
    return unsafeBitCast(
        glimpse_dpbusd_512(unsafeBitCast(acc, to: SIMD8<Int64>.self), unsafeBitCast(u8, to: SIMD8<Int64>.self),
                           unsafeBitCast(s8, to: SIMD8<Int64>.self)),
        to: SIMD16<Int32>.self)
#elseif GLIMPSE_AVX2
    let (a0, a1) = avx2Halves(acc), (u0, u1) = avx2Halves(u8), (s0, s1) = avx2Halves(s8)
    return avx2Join(glimpse_dpbusd_split_256(a0, glimpse_u8_low7_256(u0), glimpse_u8_high1_256(u0), s0),
                    glimpse_dpbusd_split_256(a1, glimpse_u8_low7_256(u1), glimpse_u8_high1_256(u1), s1))
#else
    let m = SIMD16<Int32>(repeating: 0xFF)
    let u0 = u8 & m, u1 = (u8 &>> 8) & m, u2 = (u8 &>> 16) & m, u3 = (u8 &>> 24) & m
    let s0 = (s8 &<< 24) &>> 24, s1 = (s8 &<< 16) &>> 24, s2 = (s8 &<< 8) &>> 24, s3 = s8 &>> 24
    return acc &+ u0 &* s0 &+ u1 &* s1 &+ u2 &* s2 &+ u3 &* s3
#endif
}

/// int16 products of `a` and `b` summed in pairs into eight int32 lanes, added to `acc`: `vpmaddwd` +
/// `vpaddd` on AVX2 targets (the step of `qs8_gemm_8x32_avx2`), a portable sequence elsewhere.
@inlinable @inline(__always)
public func madd16(_ acc: SIMD8<Int32>, _ a: SIMD16<Int16>, _ b: SIMD16<Int16>) -> SIMD8<Int32> {
#if GLIMPSE_AVX2
    return unsafeBitCast(glimpse_madd_i16_256(unsafeBitCast(acc, to: SIMD4<Int64>.self), unsafeBitCast(a, to: SIMD4<Int64>.self),
                                              unsafeBitCast(b, to: SIMD4<Int64>.self)), to: SIMD8<Int32>.self)
#else
    let p = SIMD16<Int32>(truncatingIfNeeded: a) &* SIMD16<Int32>(truncatingIfNeeded: b)
    return acc &+ p.evenHalf &+ p.oddHalf
#endif
}

/// Scalar reference of `dpbusd` for one lane.
@inlinable
public func dpbusdReference(_ acc: Int32, _ u8: UInt32, _ s8: UInt32) -> Int32 {
    var sum = acc
    for i in 0..<4 {
        let u = Int32((u8 >> (8 * UInt32(i))) & 0xFF)
        let s = Int32(Int8(truncatingIfNeeded: s8 >> (8 * UInt32(i))))
        sum = sum &+ u * s
    }
    return sum
}

/// Whether the int8 kernels run on vector dot products and lane conversions: `vpdpbusd` on AVX-512
/// VNNI targets, `vpmaddubsw` + `vpmaddwd` on AVX2 ones. Elsewhere they run a portable form that
/// gives the same results far more slowly, and the engine keeps quantized graphs on its fp32
/// lowering instead (`LowerQuantizedToInt8`).
public let int8KernelsAccelerated: Bool = {
#if GLIMPSE_VNNI || GLIMPSE_AVX2
    return true
#else
    return false
#endif
}()
