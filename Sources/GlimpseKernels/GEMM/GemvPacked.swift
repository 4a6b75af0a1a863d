/// y = A·x for one column (N = 1: the 1×1 convolutions of squeeze-and-excitation blocks), reading
/// A in the GEMM's packed layout (`GemmPacking.packA`, tiles of 6 rows, k-major). The 32-column
/// micro-kernel would compute 31 padding columns here; this reads each packed weight once.
///
/// Each step loads 8 floats at a tile's k-th 6-row group (lanes 6 and 7 belong to the next group
/// and are ignored), so the packed buffer needs 2 floats of slack past its end.
public enum GemvPacked {
    /// y[m·yStride] = epilogue(Σ_k A[m][k]·x[k]) for the 6-row tiles in `tiles`
    /// (the epilogue sees row m, column 0).
    @inline(__always)
    public static func run(m: Int, k: Int, packedA: UnsafePointer<Float>, x: UnsafePointer<Float>,
                           y: UnsafeMutablePointer<Float>, yStride: Int, epilogue: GemmEpilogue, tiles: Range<Int>) {
        let mr = GemmTile.mr
        for t in tiles {
            let a = UnsafeRawPointer(packedA + t &* k &* mr)
            var s0 = SIMD8<Float>(), s1 = SIMD8<Float>(), s2 = SIMD8<Float>(), s3 = SIMD8<Float>()
            var kk = 0
            while kk &+ 4 <= k {
                let p = a + kk &* mr &* 4
                s0.addProduct(p.loadUnaligned(as: SIMD8<Float>.self), SIMD8(repeating: x[kk]))
                s1.addProduct(p.loadUnaligned(fromByteOffset: 24, as: SIMD8<Float>.self), SIMD8(repeating: x[kk &+ 1]))
                s2.addProduct(p.loadUnaligned(fromByteOffset: 48, as: SIMD8<Float>.self), SIMD8(repeating: x[kk &+ 2]))
                s3.addProduct(p.loadUnaligned(fromByteOffset: 72, as: SIMD8<Float>.self), SIMD8(repeating: x[kk &+ 3]))
                kk &+= 4
            }
            while kk < k {
                s0.addProduct((a + kk &* mr &* 4).loadUnaligned(as: SIMD8<Float>.self), SIMD8(repeating: x[kk]))
                kk &+= 1
            }
            let sum = (s0 + s1) + (s2 + s3)
            let m0 = t &* mr
            for r in 0..<min(mr, m &- m0) {
                y[(m0 &+ r) &* yStride] = epilogue.apply(sum[r], row: m0 &+ r, col: 0)
            }
        }
    }
}
