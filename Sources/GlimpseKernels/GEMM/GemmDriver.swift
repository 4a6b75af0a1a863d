/// Blocked single-precision GEMM over the 6×32 micro-kernel: C[M×N] = A[M×K]·B[K×N] with a fused
/// epilogue. A is pre-packed (see `GemmPacking`); B comes from a `GemmBSource` one panel at a time.
/// Callers split work across threads by column panels (`panels`), each with its own scratch.
public enum GemmDriver {
    /// K block size: a 256 × 32 B panel (32 KiB) stays in L1/L2 while all A tiles stream past it.
    public static let kBlock = 256

    /// Floats of per-thread scratch `run` needs.
    public static func scratchCount(k: Int) -> Int { min(k, kBlock) * GemmTile.nr + 16 }

    public static func panelCount(n: Int) -> Int { (n + GemmTile.nr - 1) / GemmTile.nr }

    ///
    /// `rowTiles` limits the work to those 6-row tiles of C (all by default): threads that split a
    /// small plane by rows write whole rows of C, and never share a cache line inside one.
    ///
    /// Batch folded into N: with `imageColumns` < N, column j of the folded C is column
    /// j % imageColumns of image j / imageColumns, whose C (and residual) starts `imageStride` floats
    /// after the previous image's; `imageColumns` must be at least 32 so a tile spans at most two images.
    @inline(__always)
    public static func run<B: GemmBSource>(
        m: Int, n: Int, k: Int, packedA: UnsafePointer<Float>, b: B,
        c: UnsafeMutablePointer<Float>, ldc: Int, epilogue: GemmEpilogue,
        panels: Range<Int>, rowTiles: Range<Int>? = nil, scratch: UnsafeMutablePointer<Float>,
        imageColumns: Int = .max, imageStride: Int = 0
    ) {
        let mr = GemmTile.mr, nr = GemmTile.nr
        let mTiles = rowTiles ?? 0..<(m + mr - 1) / mr
        var k0 = 0
        repeat {
            let kc = min(kBlock, k - k0)
            let last = k0 + kc >= k
            for p in panels {
                let n0 = p * nr
                let nc = min(nr, n - n0)
                let bPanel = b.panel(k0: k0, kc: kc, n0: n0, nc: nc, scratch: scratch)
                let image = n0 / imageColumns, col = n0 - image * imageColumns
                let inImage = min(nc, imageColumns - col)
                let cImage = c + image * imageStride
                let eImage = epilogue.shiftingResidual(by: image * imageStride)
                let eNext = epilogue.shiftingResidual(by: (image + 1) * imageStride)
                for t in mTiles {
                    let m0 = t * mr
                    let split = inImage < nc
                        ? GemmColumnSplit(column: inImage, c: cImage + imageStride + m0 * ldc,
                                          epilogue: last ? eNext.offset(row: m0, col: 0) : nil)
                        : nil
                    gemm_f32_6x32_avx512(
                        kc: kc, a: packedA + t * k * mr + k0 * mr, b: bPanel,
                        c: cImage + m0 * ldc + col, ldc: ldc, rows: min(mr, m - m0), cols: nc,
                        accumulate: k0 > 0, epilogue: last ? eImage.offset(row: m0, col: col) : nil, split: split)
                }
            }
            k0 += kc
        } while k0 < k
    }
}
