/// The main GEMM micro-kernel for AVX2 (16 ymm registers): the same packed A (kc × 6) and B panel
/// (kc × 32) as `f32_gemm_6x32_avx512`, multiplied as two 6 × 16 halves, one after the other. Each
/// half keeps 12 ymm accumulators (six rows of two 8-float vectors), the two B vectors of a step and
/// one broadcast of A in registers: 15 of 16, so the k loop runs without spills (the 6 × 32 tile
/// needs 24 ymm for its accumulators alone). The first half's rows wait in a stack tile while the
/// second half runs; the finish and the epilogue are the 6 × 32 kernel's.
@inline(__always)
public func f32_gemm_6x16_avx2(
    kc: Int, a: UnsafePointer<Float>, b: UnsafePointer<Float>,
    c: UnsafeMutablePointer<Float>, ldc: Int, rows: Int, cols: Int,
    accumulate: Bool, epilogue: GemmEpilogue?, split: GemmColumnSplit? = nil
) {
    // The stack tile is left uninitialized (zeroing it was a memset call per tile): every row the
    // finish reads is written by a half, and the stores read no column past `cols`. (With 64-byte
    // alignment the allocation went to the heap; the loads and stores are unaligned anyway.)
    withUnsafeTemporaryAllocation(byteCount: MemoryLayout<GemmAccumulatorTile>.size, alignment: 16) { acc in
        let base = acc.baseAddress!
        f32_gemm_6x16_avx2_half(kc: kc, a: a, b: UnsafeRawPointer(b), bStep: 128, into: base, rowBytes: 128)
        if cols > 16 {
            f32_gemm_6x16_avx2_half(kc: kc, a: a, b: UnsafeRawPointer(b) + 64, bStep: 128, into: base + 64, rowBytes: 128)
        }
        // A whole tile with no epilogue or the common one is finished row by row from the stack tile,
        // as the 6 × 32 kernel finishes its registers.
        if split == nil && rows == GemmTile.mr && cols == GemmTile.nr && (epilogue?.isRegisterFriendly ?? true) {
            let finish = GemmRegisterFinish<NoRowScaling>(c: c, ldc: ldc, accumulate: accumulate, epilogue: epilogue)
            for r in 0..<GemmTile.mr {
                finish.row(UnsafeRawPointer(base).loadUnaligned(fromByteOffset: r &* 128, as: SIMD16<Float>.self),
                           UnsafeRawPointer(base).loadUnaligned(fromByteOffset: r &* 128 &+ 64, as: SIMD16<Float>.self), r)
            }
            return
        }
        GemmTileStore(c: c, ldc: ldc, rows: rows, cols: split.map { min(cols, $0.column) } ?? cols,
                      accumulate: accumulate, epilogue: epilogue).store(UnsafeRawPointer(base))
        if let split, split.column < cols {
            GemmTileStore(c: split.c, ldc: ldc, rows: rows, cols: cols - split.column, accumulate: accumulate,
                          epilogue: split.epilogue, accColumn: split.column).store(UnsafeRawPointer(base))
        }
    }
}

/// 6 rows × 16 columns over `kc` steps: A packed kc × 6, `b` the first of 16 columns of B whose rows
/// are `bStep` bytes apart. Row r of the result goes to `into + rowBytes·r`.
@inline(__always)
func f32_gemm_6x16_avx2_half(kc: Int, a: UnsafePointer<Float>, b: UnsafeRawPointer, bStep: Int,
                             into: UnsafeMutableRawPointer, rowBytes: Int) {
    var c0 = SIMD16<Float>(), c1 = SIMD16<Float>(), c2 = SIMD16<Float>()
    var c3 = SIMD16<Float>(), c4 = SIMD16<Float>(), c5 = SIMD16<Float>()
    var ap = UnsafeRawPointer(a), bp = b
    var k = kc
    while k > 0 {
        let b0 = bp.loadUnaligned(as: SIMD16<Float>.self)
        c0.addProduct(SIMD16<Float>(repeating: ap.loadUnaligned(as: Float.self)), b0)
        c1.addProduct(SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 4, as: Float.self)), b0)
        c2.addProduct(SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 8, as: Float.self)), b0)
        c3.addProduct(SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 12, as: Float.self)), b0)
        c4.addProduct(SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 16, as: Float.self)), b0)
        c5.addProduct(SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 20, as: Float.self)), b0)
        ap += 24
        bp += bStep
        k &-= 1
    }
    into.storeBytes(of: c0, as: SIMD16<Float>.self)
    into.storeBytes(of: c1, toByteOffset: rowBytes, as: SIMD16<Float>.self)
    into.storeBytes(of: c2, toByteOffset: 2 &* rowBytes, as: SIMD16<Float>.self)
    into.storeBytes(of: c3, toByteOffset: 3 &* rowBytes, as: SIMD16<Float>.self)
    into.storeBytes(of: c4, toByteOffset: 4 &* rowBytes, as: SIMD16<Float>.self)
    into.storeBytes(of: c5, toByteOffset: 5 &* rowBytes, as: SIMD16<Float>.self)
}

/// `f32_gemm_6x49_avx512` for AVX2: the 49 columns (B read in place, rows `ldb` floats apart) as
/// three 6 × 16 passes of 12 ymm accumulators each, and the last column as a pass of two 8-lane
/// accumulators (even and odd steps) over the six rows of A. The 6 × 49 tile's 18 zmm accumulators
/// would take 36 ymm.
@inline(__always)
public func f32_gemm_6x49_avx2(
    kc: Int, a: UnsafePointer<Float>, b: UnsafePointer<Float>, ldb: Int,
    c: UnsafeMutablePointer<Float>, ldc: Int, rows: Int, accumulate: Bool, epilogue: GemmEpilogue?
) {
    let z = SIMD16<Float>()
    var tile = (z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z)
    let bStep = ldb &* 4
    // A zeroed tuple, not a temporary allocation: 1,152 bytes went to the heap.
    withUnsafeMutableBytes(of: &tile) { raw in
        let base = raw.baseAddress!
        for block in 0..<3 {
            f32_gemm_6x16_avx2_half(kc: kc, a: a, b: UnsafeRawPointer(b) + 64 &* block, bStep: bStep,
                                    into: base + 64 &* block, rowBytes: 192)
        }
        var even = SIMD8<Float>(), odd = SIMD8<Float>()
        var ap = UnsafeRawPointer(a), bp = UnsafeRawPointer(b) + 192
        var k = kc
        // The 8-lane loads of A's six floats read two past them (the next step's); the last step
        // reads its six one by one, so nothing past the tile is read.
        while k > 2 {
            even.addProduct(ap.loadUnaligned(as: SIMD8<Float>.self), SIMD8(repeating: bp.loadUnaligned(as: Float.self)))
            odd.addProduct(ap.loadUnaligned(fromByteOffset: 24, as: SIMD8<Float>.self),
                           SIMD8(repeating: bp.loadUnaligned(fromByteOffset: bStep, as: Float.self)))
            ap += 48
            bp += 2 &* bStep
            k &-= 2
        }
        while k > 0 {
            even.addProduct(k > 1 ? ap.loadUnaligned(as: SIMD8<Float>.self) : GemmTail.sixRows(ap),
                            SIMD8(repeating: bp.loadUnaligned(as: Float.self)))
            ap += 24
            bp += bStep
            k &-= 1
        }
        let last = even + odd
        let finish = Gemm49Finish(c: c, ldc: ldc, accumulate: accumulate, epilogue: epilogue)
        let tile = UnsafeRawPointer(base)
        for r in 0..<rows {
            finish.row(tile.load(fromByteOffset: r &* 192, as: SIMD16<Float>.self),
                       tile.load(fromByteOffset: r &* 192 &+ 64, as: SIMD16<Float>.self),
                       tile.load(fromByteOffset: r &* 192 &+ 128, as: SIMD16<Float>.self), last[r], r)
        }
    }
}
