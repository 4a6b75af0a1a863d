/// C[0..<rows, 0..<49] (+)= A·B over `kc` steps for a GEMM of exactly 49 columns (a 7×7 plane),
/// with A packed as kc × 6 (zero-padded rows) and B read in place, row k at `b + k·ldb`.
///
/// The 6 × 32 tile covers 49 columns as a whole panel and a 17-column one: A's tile is read twice,
/// and with weights too large for L2 (MobileNetV2's 320 → 1280 is 1.6 MB) every pass streams them
/// again. Here each row's 49 columns are three 16-float vectors and one 8-lane FMA per step over the
/// six rows of A for the last column: 19 FMAs per step, as before, but A is read once and B needs
/// no packing. `accumulate` adds to C's current contents (for K blocks after the first); `epilogue`
/// (already offset to this tile) is applied on the last K block only.
@inline(__always)
public func f32_gemm_6x49_avx512(
    kc: Int, a: UnsafePointer<Float>, b: UnsafePointer<Float>, ldb: Int,
    c: UnsafeMutablePointer<Float>, ldc: Int, rows: Int, accumulate: Bool, epilogue: GemmEpilogue?
) {
    var c00 = SIMD16<Float>(), c01 = SIMD16<Float>(), c02 = SIMD16<Float>()
    var c10 = SIMD16<Float>(), c11 = SIMD16<Float>(), c12 = SIMD16<Float>()
    var c20 = SIMD16<Float>(), c21 = SIMD16<Float>(), c22 = SIMD16<Float>()
    var c30 = SIMD16<Float>(), c31 = SIMD16<Float>(), c32 = SIMD16<Float>()
    var c40 = SIMD16<Float>(), c41 = SIMD16<Float>(), c42 = SIMD16<Float>()
    var c50 = SIMD16<Float>(), c51 = SIMD16<Float>(), c52 = SIMD16<Float>()
    var last = SIMD8<Float>()
    var ap = UnsafeRawPointer(a)
    var bp = UnsafeRawPointer(b)
    let bStep = ldb &* 4
    // One step: `rows` holds A's six floats of this step in its first lanes (column 48 of every row).
    @inline(__always) func step(_ rows: SIMD8<Float>) {
        let b0 = bp.loadUnaligned(as: SIMD16<Float>.self)
        let b1 = bp.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
        let b2 = bp.loadUnaligned(fromByteOffset: 128, as: SIMD16<Float>.self)
        var r = SIMD16<Float>(repeating: ap.loadUnaligned(as: Float.self))
        c00.addProduct(r, b0); c01.addProduct(r, b1); c02.addProduct(r, b2)
        r = SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 4, as: Float.self))
        c10.addProduct(r, b0); c11.addProduct(r, b1); c12.addProduct(r, b2)
        r = SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 8, as: Float.self))
        c20.addProduct(r, b0); c21.addProduct(r, b1); c22.addProduct(r, b2)
        r = SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 12, as: Float.self))
        c30.addProduct(r, b0); c31.addProduct(r, b1); c32.addProduct(r, b2)
        r = SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 16, as: Float.self))
        c40.addProduct(r, b0); c41.addProduct(r, b1); c42.addProduct(r, b2)
        r = SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 20, as: Float.self))
        c50.addProduct(r, b0); c51.addProduct(r, b1); c52.addProduct(r, b2)
        last.addProduct(rows, SIMD8<Float>(repeating: bp.loadUnaligned(fromByteOffset: 192, as: Float.self)))
        ap += 24
        bp += bStep
    }
    // The 8-lane load of A's six floats reads two past them (the next step's); the last step reads
    // its six one by one, so nothing past the tile is read.
    var k = kc
    while k > 1 {
        step(ap.loadUnaligned(as: SIMD8<Float>.self))
        k &-= 1
    }
    if k == 1 { step(GemmTail.sixRows(ap)) }
    // The rows go through a stack tile to one loop with the finish inlined once: called per row,
    // the finish stayed out of line (six calls per tile, the vectors passed in xmm registers).
    var tile = (c00, c01, c02, c10, c11, c12, c20, c21, c22, c30, c31, c32, c40, c41, c42, c50, c51, c52)
    let finish = Gemm49Finish(c: c, ldc: ldc, accumulate: accumulate, epilogue: epilogue)
    withUnsafeBytes(of: &tile) { raw in
        for r in 0..<rows {
            finish.row(raw.load(fromByteOffset: r &* 192, as: SIMD16<Float>.self),
                       raw.load(fromByteOffset: r &* 192 &+ 64, as: SIMD16<Float>.self),
                       raw.load(fromByteOffset: r &* 192 &+ 128, as: SIMD16<Float>.self), last[r], r)
        }
    }
}

/// Stores one row of a 49-column tile: C's current contents added when accumulating, then the
/// epilogue (if any) on the three vectors and the last column.
struct Gemm49Finish {
    let c: UnsafeMutablePointer<Float>
    let ldc: Int
    let accumulate: Bool
    let epilogue: GemmEpilogue?

    @_transparent
    func row(_ v0: SIMD16<Float>, _ v1: SIMD16<Float>, _ v2: SIMD16<Float>, _ s: Float, _ r: Int) {
        let dst = c + r &* ldc
        let raw = UnsafeMutableRawPointer(dst)
        var a = v0, b = v1, d = v2, e = s
        if accumulate {
            a += raw.loadUnaligned(as: SIMD16<Float>.self)
            b += raw.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
            d += raw.loadUnaligned(fromByteOffset: 128, as: SIMD16<Float>.self)
            e += dst[48]
        }
        if let epilogue {
            a = epilogue.apply(a, row: r, col: 0)
            b = epilogue.apply(b, row: r, col: 16)
            d = epilogue.apply(d, row: r, col: 32)
            e = epilogue.apply(e, row: r, col: 48)
        }
        raw.storeBytes(of: a, as: SIMD16<Float>.self)
        raw.storeBytes(of: b, toByteOffset: 64, as: SIMD16<Float>.self)
        raw.storeBytes(of: d, toByteOffset: 128, as: SIMD16<Float>.self)
        dst[48] = e
    }
}

/// GEMM of exactly 49 columns over `f32_gemm_6x49_avx512`: C[M×49] = A[M×K]·B[K×49] with a fused
/// epilogue, A pre-packed (`GemmPacking`), B row-major with rows `ldb` floats apart, read in place.
/// K blocks run outermost, so a block of B (256 rows, 50 KB) stays in cache while every row tile
/// of A streams past it once.
public enum Gemm49Driver {
    public static let columns = 49

    /// `rowTiles` limits the work to those 6-row tiles of C: threads split a layer by rows.
    @inline(__always)
    public static func run(m: Int, k: Int, packedA: UnsafePointer<Float>, b: UnsafePointer<Float>, ldb: Int,
                           c: UnsafeMutablePointer<Float>, ldc: Int, epilogue: GemmEpilogue, rowTiles: Range<Int>) {
        let mr = GemmTile.mr
        let avx512 = KernelDispatch.usesAVX512
        var k0 = 0
        repeat {
            let kc = min(GemmDriver.kBlock, k &- k0)
            let last = k0 &+ kc >= k
            for t in rowTiles {
                let m0 = t &* mr
                let a = packedA + GemmPacking.aOffset(tile: t, k0: k0, kc: kc, m: m)
                if avx512 {
                    f32_gemm_6x49_avx512(kc: kc, a: a, b: b + k0 &* ldb, ldb: ldb, c: c + m0 &* ldc, ldc: ldc,
                                         rows: min(mr, m &- m0), accumulate: k0 > 0,
                                         epilogue: last ? epilogue.offset(row: m0, col: 0) : nil)
                } else {
                    f32_gemm_6x49_avx2(kc: kc, a: a, b: b + k0 &* ldb, ldb: ldb, c: c + m0 &* ldc, ldc: ldc,
                                       rows: min(mr, m &- m0), accumulate: k0 > 0,
                                       epilogue: last ? epilogue.offset(row: m0, col: 0) : nil)
                }
            }
            k0 &+= kc
        } while k0 < k
    }
}

