#if GLIMPSE_AVX2
import CGlimpseSIMD

/// u8 × s8 → u8 GEMM micro-kernel for AVX2 targets without VNNI, on the same packed A block (8
/// rows, `[K/4][8][4]`) and B panel (32 columns, `[K/4][32][4]`) as `qs8_gemm_8x32_avx512vnni`, so
/// `QS8Conv` and the packing are shared. It runs as four 4×16 sub-tiles (sixteen ymm registers
/// hold no more).
///
/// Each k-group multiplies with `vpmaddubsw` + `vpmaddwd`. `vpmaddubsw` saturates its int16 pair
/// sums, which full-range u8 × s8 operands can exceed (2·255·128), so every panel vector is split
/// once into its low seven bits and its top bit (u = lo7 + 128·hi1), each multiplied separately: no
/// pair sum can saturate and the result equals `vpdpbusd` bit for bit, for any weights and inputs.
/// (The other usual remedies, weights restricted to 7 bits or inputs to 0...127, change the model's
/// arithmetic; this one costs two extra multiply-adds per step instead.)
public func qs8_gemm_8x32_avx2(a: UnsafePointer<Int8>, panel: UnsafePointer<UInt8>, groups: Int, rows: Int, row0: Int,
                               n: Int, c: UnsafeMutablePointer<UInt8>, ldc: Int, requant rq: RequantPointers) {
    var half = 0
    while half < 2 && 4 * half < rows {
        var block = 0
        while block < 2 && 16 * block < n {
            qs8_gemm_4x16_avx2(a: a + 16 * half, panel: panel + 64 * block, groups: groups, rows: min(4, rows - 4 * half),
                               row0: row0 + 4 * half, n: min(16, n - 16 * block), c: c + 4 * half * ldc + 16 * block, ldc: ldc,
                               requant: rq)
            block += 1
        }
        half += 1
    }
}

/// Rows 0..<4 of an 8-row A block (`a` already offset to the first of them; 32 bytes per k-group)
/// times 16 columns of a panel (`panel` offset to the first; 128 bytes per k-group).
@inline(__always)
func qs8_gemm_4x16_avx2(a: UnsafePointer<Int8>, panel: UnsafePointer<UInt8>, groups: Int, rows: Int, row0: Int,
                        n: Int, c: UnsafeMutablePointer<UInt8>, ldc: Int, requant rq: RequantPointers) {
    let z = SIMD4<Int64>()
    var c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z
    var pa = UnsafeRawPointer(a), pb = UnsafeRawPointer(panel)
    for _ in 0..<groups {
        let b0 = pb.loadUnaligned(as: SIMD4<Int64>.self), b1 = pb.loadUnaligned(fromByteOffset: 32, as: SIMD4<Int64>.self)
        let l0 = glimpse_u8_low7_256(b0), h0 = glimpse_u8_high1_256(b0)
        let l1 = glimpse_u8_low7_256(b1), h1 = glimpse_u8_high1_256(b1)
        var w = glimpse_broadcast32_256(pa.load(as: Int32.self))
        c00 = glimpse_dpbusd_split_256(c00, l0, h0, w); c01 = glimpse_dpbusd_split_256(c01, l1, h1, w)
        w = glimpse_broadcast32_256(pa.load(fromByteOffset: 4, as: Int32.self))
        c10 = glimpse_dpbusd_split_256(c10, l0, h0, w); c11 = glimpse_dpbusd_split_256(c11, l1, h1, w)
        w = glimpse_broadcast32_256(pa.load(fromByteOffset: 8, as: Int32.self))
        c20 = glimpse_dpbusd_split_256(c20, l0, h0, w); c21 = glimpse_dpbusd_split_256(c21, l1, h1, w)
        w = glimpse_broadcast32_256(pa.load(fromByteOffset: 12, as: Int32.self))
        c30 = glimpse_dpbusd_split_256(c30, l0, h0, w); c31 = glimpse_dpbusd_split_256(c31, l1, h1, w)
        pa += 32
        pb += 128
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
