#if GLIMPSE_AVX2 || GLIMPSE_VNNI
import CGlimpseSIMD
#endif

/// u8 × s8 → u8 GEMM micro-kernel: C[8 rows][32 columns] = requantize(A · B), A the packed s8
/// weights of 8 output channels, B a packed u8 panel of 32 columns (pixels), K in groups of 4.
///
/// Layouts (bytes):
/// - A, per block of 8 rows: `[K/4][8 rows][4]`: row r's four weights of k-group g are one 32-bit
///   word, broadcast to all lanes (`vpdpbusd` with a `{1to16}` memory operand).
/// - B panel: `[K/4][32 columns][4]`: two 64-byte vectors per k-group, column j's four inputs in lane j.
///
/// Rows past the matrix are zero weights; K is zero-padded to a multiple of 4 in A (B's padding
/// bytes are then multiplied by 0). 16 accumulators, 2 B vectors and 1 broadcast per step.
public enum QS8Gemm {
    public static let mr = 8
    public static let nr = 32

    @inlinable public static func kGroups(_ k: Int) -> Int { (k + 3) / 4 }
    @inlinable public static func rowBlocks(_ m: Int) -> Int { (m + mr - 1) / mr }
    /// Whether the int8 GEMM runs on AVX2 without VNNI (the kernels in use, `KernelDispatch`): its
    /// weights are packed wide (int16 pairs, `qs8_gemm_8x32_avx2`) and its panels widened after packing.
    public static var packsWide: Bool {
#if GLIMPSE_AVX2
        return !KernelDispatch.usesVNNI && KernelDispatch.isa >= .avx2
#else
        return false
#endif
    }

    /// Bytes of packed A for an m × k weight matrix (`wide`: int16 pairs, twice the bytes).
    @inlinable public static func packedACount(m: Int, k: Int, wide: Bool = packsWide) -> Int {
        rowBlocks(m) * mr * kGroups(k) * (wide ? 8 : 4)
    }
    /// Bytes of packed A per output row, so row block b starts at `b · mr · aRowBytes`.
    @inlinable public static func aRowBytes(k: Int, wide: Bool) -> Int { kGroups(k) * (wide ? 8 : 4) }
    /// Bytes of one B panel (`wide`: the u8 panel, then its int16 widening).
    @inlinable public static func panelCount(k: Int, wide: Bool = packsWide) -> Int { kGroups(k) * nr * (wide ? 12 : 4) }

    /// Packs row-major s8 weights `w[m][k]` (row stride `k`). Narrow: `[block][K/4][8 rows][4 × s8]`.
    /// Wide: `[block][K/2][8 rows][2 × int16]`, each row's two weights of a k-pair one 32-bit word.
    public static func packA(_ w: UnsafePointer<Int8>, m: Int, k: Int, into dst: UnsafeMutablePointer<Int8>,
                             wide: Bool = packsWide) {
        let groups = kGroups(k)
        if wide {
            let out = UnsafeMutableRawPointer(dst).assumingMemoryBound(to: Int16.self)
            let pairs = 2 * groups
            for b in 0..<rowBlocks(m) {
                let block = out + b * mr * pairs * 2
                for p in 0..<pairs {
                    for r in 0..<mr {
                        for i in 0..<2 {
                            let row = b * mr + r, col = p * 2 + i
                            block[(p * mr + r) * 2 + i] = row < m && col < k ? Int16(w[row * k + col]) : 0
                        }
                    }
                }
            }
            return
        }
        for b in 0..<rowBlocks(m) {
            let block = dst + b * mr * groups * 4
            for g in 0..<groups {
                for r in 0..<mr {
                    for i in 0..<4 {
                        let row = b * mr + r, col = g * 4 + i
                        block[g * mr * 4 + r * 4 + i] = row < m && col < k ? w[row * k + col] : 0
                    }
                }
            }
        }
    }

    /// Widens a packed u8 panel (`[K/4][32][4]` at `panel`) into its int16 k-pair form
    /// (`[K/2][32][2]`, right after it) for `qs8_gemm_8x32_avx2`.
    @inline(__always)
    public static func widenPanel(_ panel: UnsafeMutablePointer<UInt8>, groups: Int) {
#if GLIMPSE_AVX2
        let wide = UnsafeMutableRawPointer(panel + groups * nr * 4)
        for g in 0..<groups {
            glimpse_widen_group_c4_c2(panel + g * nr * 4, wide + g * 256)
        }
#endif
    }

    /// Row sums of the weights, for the input zero-point correction `bias − zx·Σw`.
    public static func rowSums(_ w: UnsafePointer<Int8>, m: Int, k: Int) -> [Int32] {
        (0..<m).map { r in (0..<k).reduce(Int32(0)) { $0 &+ Int32(w[r * k + $1]) } }
    }

    /// One 8-row block of A times one panel; rows `row0 ..< row0 + rows` of C (rows ≤ 8) at
    /// `c + r·ldc`, columns `0 ..< n` (n ≤ 32). VNNI builds run `vpdpbusd`, other AVX2 builds
    /// `qs8_gemm_8x32_avx2`.
    /// `wide`: A and the panel are in the wide layout (`packsWide`), run by `qs8_gemm_8x32_avx2`.
    @inline(__always)
    public static func kernel(a: UnsafePointer<Int8>, panel: UnsafePointer<UInt8>, groups: Int, rows: Int, row0: Int,
                              n: Int, c: UnsafeMutablePointer<UInt8>, ldc: Int, requant rq: RequantPointers, wide: Bool) {
#if GLIMPSE_AVX2
        if wide {
            qs8_gemm_8x32_avx2(a: a, panel: panel, groups: groups, rows: rows, row0: row0, n: n, c: c, ldc: ldc, requant: rq)
            return
        }
#endif
        if n > 16 {
            qs8_gemm_8x32_avx512vnni(a: a, panel: panel, groups: groups, rows: rows, row0: row0, n: n, c: c, ldc: ldc, requant: rq)
        } else {
            qs8_gemm_8x16_avx512vnni(a: a, panel: panel, groups: groups, rows: rows, row0: row0, n: n, c: c, ldc: ldc, requant: rq)
        }
    }
}

@inline(__always)
func broadcastWord(_ p: UnsafeRawPointer, _ offset: Int) -> SIMD16<Int32> {
    SIMD16<Int32>(repeating: p.load(fromByteOffset: offset, as: Int32.self))
}

public func qs8_gemm_8x32_avx512vnni(a: UnsafePointer<Int8>, panel: UnsafePointer<UInt8>, groups: Int, rows: Int, row0: Int,
                                     n: Int, c: UnsafeMutablePointer<UInt8>, ldc: Int, requant rq: RequantPointers) {
    // The accumulators start at their row's bias (rows past the matrix at 0), which saves the store
    // one add per 16 outputs: with K = 16 or 24 the store costs more than the `vpdpbusd` steps.
    let z = SIMD16<Int32>(), bias = rq.bias + row0
    let s0 = SIMD16<Int32>(repeating: bias[0])
    let s1 = rows > 1 ? SIMD16<Int32>(repeating: bias[1]) : z, s2 = rows > 2 ? SIMD16<Int32>(repeating: bias[2]) : z
    let s3 = rows > 3 ? SIMD16<Int32>(repeating: bias[3]) : z, s4 = rows > 4 ? SIMD16<Int32>(repeating: bias[4]) : z
    let s5 = rows > 5 ? SIMD16<Int32>(repeating: bias[5]) : z, s6 = rows > 6 ? SIMD16<Int32>(repeating: bias[6]) : z
    let s7 = rows > 7 ? SIMD16<Int32>(repeating: bias[7]) : z
    var c00 = s0, c01 = s0, c10 = s1, c11 = s1, c20 = s2, c21 = s2, c30 = s3, c31 = s3
    var c40 = s4, c41 = s4, c50 = s5, c51 = s5, c60 = s6, c61 = s6, c70 = s7, c71 = s7
    var pa = UnsafeRawPointer(a), pb = UnsafeRawPointer(panel)
    for _ in 0..<groups {
        let b0 = pb.load(as: SIMD16<Int32>.self), b1 = pb.load(fromByteOffset: 64, as: SIMD16<Int32>.self)
        var w = broadcastWord(pa, 0)
        c00 = dpbusd(c00, b0, w); c01 = dpbusd(c01, b1, w)
        w = broadcastWord(pa, 4)
        c10 = dpbusd(c10, b0, w); c11 = dpbusd(c11, b1, w)
        w = broadcastWord(pa, 8)
        c20 = dpbusd(c20, b0, w); c21 = dpbusd(c21, b1, w)
        w = broadcastWord(pa, 12)
        c30 = dpbusd(c30, b0, w); c31 = dpbusd(c31, b1, w)
        w = broadcastWord(pa, 16)
        c40 = dpbusd(c40, b0, w); c41 = dpbusd(c41, b1, w)
        w = broadcastWord(pa, 20)
        c50 = dpbusd(c50, b0, w); c51 = dpbusd(c51, b1, w)
        w = broadcastWord(pa, 24)
        c60 = dpbusd(c60, b0, w); c61 = dpbusd(c61, b1, w)
        w = broadcastWord(pa, 28)
        c70 = dpbusd(c70, b0, w); c71 = dpbusd(c71, b1, w)
        pa += 32
        pb += 128
    }
    let n1 = n - 16
    storeRow(c00, c01, c, row0, n1, rq)
    if rows > 1 { storeRow(c10, c11, c + ldc, row0 + 1, n1, rq) }
    if rows > 2 { storeRow(c20, c21, c + 2 * ldc, row0 + 2, n1, rq) }
    if rows > 3 { storeRow(c30, c31, c + 3 * ldc, row0 + 3, n1, rq) }
    if rows > 4 { storeRow(c40, c41, c + 4 * ldc, row0 + 4, n1, rq) }
    if rows > 5 { storeRow(c50, c51, c + 5 * ldc, row0 + 5, n1, rq) }
    if rows > 6 { storeRow(c60, c61, c + 6 * ldc, row0 + 6, n1, rq) }
    if rows > 7 { storeRow(c70, c71, c + 7 * ldc, row0 + 7, n1, rq) }
}

/// One output row of 32 columns (16 + `n1`), its sums including the bias, requantized for channel `channel`.
@inline(__always)
func storeRow(_ lo: SIMD16<Int32>, _ hi: SIMD16<Int32>, _ dst: UnsafeMutablePointer<UInt8>, _ channel: Int, _ n1: Int,
              _ rq: RequantPointers) {
    RequantPointers.store(rq.store16Biased(lo, channel: channel), to: dst, count: 16)
    RequantPointers.store(rq.store16Biased(hi, channel: channel), to: dst + 16, count: n1)
}

public func qs8_gemm_8x16_avx512vnni(a: UnsafePointer<Int8>, panel: UnsafePointer<UInt8>, groups: Int, rows: Int, row0: Int,
                                     n: Int, c: UnsafeMutablePointer<UInt8>, ldc: Int, requant rq: RequantPointers) {
    let z = SIMD16<Int32>()
    var c0 = z, c1 = z, c2 = z, c3 = z, c4 = z, c5 = z, c6 = z, c7 = z
    var pa = UnsafeRawPointer(a), pb = UnsafeRawPointer(panel)
    for _ in 0..<groups {
        let b0 = pb.load(as: SIMD16<Int32>.self)
        c0 = dpbusd(c0, b0, broadcastWord(pa, 0))
        c1 = dpbusd(c1, b0, broadcastWord(pa, 4))
        c2 = dpbusd(c2, b0, broadcastWord(pa, 8))
        c3 = dpbusd(c3, b0, broadcastWord(pa, 12))
        c4 = dpbusd(c4, b0, broadcastWord(pa, 16))
        c5 = dpbusd(c5, b0, broadcastWord(pa, 20))
        c6 = dpbusd(c6, b0, broadcastWord(pa, 24))
        c7 = dpbusd(c7, b0, broadcastWord(pa, 28))
        pa += 32
        pb += 128
    }
    RequantPointers.store(rq.store16(c0, channel: row0), to: c, count: n)
    if rows > 1 { RequantPointers.store(rq.store16(c1, channel: row0 + 1), to: c + ldc, count: n) }
    if rows > 2 { RequantPointers.store(rq.store16(c2, channel: row0 + 2), to: c + 2 * ldc, count: n) }
    if rows > 3 { RequantPointers.store(rq.store16(c3, channel: row0 + 3), to: c + 3 * ldc, count: n) }
    if rows > 4 { RequantPointers.store(rq.store16(c4, channel: row0 + 4), to: c + 4 * ldc, count: n) }
    if rows > 5 { RequantPointers.store(rq.store16(c5, channel: row0 + 5), to: c + 5 * ldc, count: n) }
    if rows > 6 { RequantPointers.store(rq.store16(c6, channel: row0 + 6), to: c + 6 * ldc, count: n) }
    if rows > 7 { RequantPointers.store(rq.store16(c7, channel: row0 + 7), to: c + 7 * ldc, count: n) }
}
