/// Blocked single-precision GEMM over the 6×32 micro-kernel: C[M×N] = A[M×K]·B[K×N] with a fused
/// epilogue. A is pre-packed (see `GemmPacking`); B comes from a `GemmBSource` one panel at a time.
/// Callers split work across threads by column panels (`panels`), each with its own scratch.
public enum GemmDriver {
    /// K block size: a 256 × 32 B panel (32 KiB) stays in L1/L2 while all A tiles stream past it.
    public static let kBlock = 256

    /// Floats of per-thread scratch `run` needs.
    public static func scratchCount(k: Int) -> Int { min(k, kBlock) * GemmTile.nr }

    public static func panelCount(n: Int) -> Int { (n + GemmTile.nr - 1) / GemmTile.nr }

    @inline(__always)
    public static func run<B: GemmBSource>(
        m: Int, n: Int, k: Int, packedA: UnsafePointer<Float>, b: B,
        c: UnsafeMutablePointer<Float>, ldc: Int, epilogue: GemmEpilogue,
        panels: Range<Int>, scratch: UnsafeMutablePointer<Float>
    ) {
        let mr = GemmTile.mr, nr = GemmTile.nr
        let mTiles = (m + mr - 1) / mr
        var k0 = 0
        repeat {
            let kc = min(kBlock, k - k0)
            let last = k0 + kc >= k
            for p in panels {
                let n0 = p * nr
                let nc = min(nr, n - n0)
                let bPanel = b.panel(k0: k0, kc: kc, n0: n0, nc: nc, scratch: scratch)
                for t in 0..<mTiles {
                    let m0 = t * mr
                    gemm_f32_6x32_avx512(
                        kc: kc, a: packedA + t * k * mr + k0 * mr, b: bPanel,
                        c: c + m0 * ldc + n0, ldc: ldc, rows: min(mr, m - m0), cols: nc,
                        accumulate: k0 > 0, epilogue: last ? epilogue.offset(row: m0, col: n0) : nil)
                }
            }
            k0 += kc
        } while k0 < k
    }
}
