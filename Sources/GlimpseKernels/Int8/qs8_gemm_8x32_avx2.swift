#if GLIMPSE_AVX2
import CGlimpseSIMD

/// u8 × s8 → u8 GEMM micro-kernel for AVX2 without VNNI, exact: C[8 rows][32 columns] =
/// requantize(A · B) over the wide layouts of `QS8Gemm` (`packsWide`):
/// - A, per block of 8 rows: `[K/2][8 rows][2 × int16]`: row r's two weights of k-pair p are one
///   32-bit word, broadcast to all lanes (`vpbroadcastd` from memory, a load).
/// - B: the u8 panel widened (`QS8Gemm.widenPanel`) to `[K/2][32 columns][2 × int16]`: 8 columns per
///   ymm vector, column j's two inputs in lane j.
///
/// Each step multiplies int16 pairs with `vpmaddwd` (16 multiply-adds, summed into int32 lanes): no
/// product or pair sum can overflow, so the result equals `vpdpbusd`'s bit for bit for any weights and
/// inputs, at the multiply count of onnxruntime's saturating `vpmaddubsw` + `vpmaddwd`. The tile runs
/// as four 4 × 16 sub-tiles: 8 accumulators, 2 B vectors, the broadcast and a product in 12 ymm.
public func qs8_gemm_8x32_avx2(a: UnsafePointer<Int8>, panel: UnsafePointer<UInt8>, groups: Int, rows: Int, row0: Int,
                               n: Int, c: UnsafeMutablePointer<UInt8>, ldc: Int, requant rq: RequantPointers) {
    let wide = UnsafeRawPointer(panel + groups * QS8Gemm.nr * 4)
    var half = 0
    while half < 2 && 4 * half < rows {
        var block = 0
        while block < 2 && 16 * block < n {
            qs8_gemm_4x16c2_avx2(a: UnsafeRawPointer(a) + 16 * half, b: wide + 64 * block, pairs: 2 * groups,
                                 rows: min(4, rows - 4 * half), row0: row0 + 4 * half, n: min(16, n - 16 * block),
                                 c: c + 4 * half * ldc + 16 * block, ldc: ldc, requant: rq)
            block += 1
        }
        half += 1
    }
}

/// Rows 0..<4 of a wide A block (`a` offset to the first of them; 32 bytes per k-pair) times 16
/// columns of a wide panel (`b` offset to the first; 128 bytes per k-pair).
@inline(__always)
func qs8_gemm_4x16c2_avx2(a: UnsafeRawPointer, b: UnsafeRawPointer, pairs: Int, rows: Int, row0: Int,
                          n: Int, c: UnsafeMutablePointer<UInt8>, ldc: Int, requant rq: RequantPointers) {
    let z = SIMD4<Int64>()
    var c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z
    var pa = a, pb = b
    var p = pairs
    while p > 0 {
        let b0 = pb.loadUnaligned(as: SIMD4<Int64>.self), b1 = pb.loadUnaligned(fromByteOffset: 32, as: SIMD4<Int64>.self)
        var w = glimpse_broadcast32_256(pa.loadUnaligned(as: Int32.self))
        c00 = glimpse_madd_i16_256(c00, b0, w); c01 = glimpse_madd_i16_256(c01, b1, w)
        w = glimpse_broadcast32_256(pa.loadUnaligned(fromByteOffset: 4, as: Int32.self))
        c10 = glimpse_madd_i16_256(c10, b0, w); c11 = glimpse_madd_i16_256(c11, b1, w)
        w = glimpse_broadcast32_256(pa.loadUnaligned(fromByteOffset: 8, as: Int32.self))
        c20 = glimpse_madd_i16_256(c20, b0, w); c21 = glimpse_madd_i16_256(c21, b1, w)
        w = glimpse_broadcast32_256(pa.loadUnaligned(fromByteOffset: 12, as: Int32.self))
        c30 = glimpse_madd_i16_256(c30, b0, w); c31 = glimpse_madd_i16_256(c31, b1, w)
        pa += 32
        pb += 128
        p &-= 1
    }
    storeRowAVX2(c00, c01, c, row0, n, rq)
    if rows > 1 { storeRowAVX2(c10, c11, c + ldc, row0 + 1, n, rq) }
    if rows > 2 { storeRowAVX2(c20, c21, c + 2 * ldc, row0 + 2, n, rq) }
    if rows > 3 { storeRowAVX2(c30, c31, c + 3 * ldc, row0 + 3, n, rq) }
}

/// Sixteen columns (two halves of eight) of one row, requantized for channel `channel`.
@inline(__always)
func storeRowAVX2(_ lo: SIMD4<Int64>, _ hi: SIMD4<Int64>, _ dst: UnsafeMutablePointer<UInt8>, _ channel: Int, _ n: Int,
                  _ rq: RequantPointers) {
    let acc = SIMD16<Int32>(lowHalf: unsafeBitCast(lo, to: SIMD8<Int32>.self), highHalf: unsafeBitCast(hi, to: SIMD8<Int32>.self))
    RequantPointers.store(rq.store16(acc, channel: channel), to: dst, count: n)
}
#endif
