/// Packing of GEMM operands into the layouts `gemm_f32_6x32_avx512` reads.
///
/// Packed A: tiles of 6 rows; tile `t` holds `K × 6` floats, element (row r, k) at `t·K·6 + k·6 + r`.
/// Packed B: panels of 32 columns; panel `p` holds `K × 32` floats, element (k, col j) at
/// `p·K·32 + k·32 + j`. Both are zero-padded past M or N.
public enum GemmPacking {
    public static func packedACount(m: Int, k: Int) -> Int {
        (m + GemmTile.mr - 1) / GemmTile.mr * GemmTile.mr * k
    }

    public static func packedBCount(n: Int, k: Int) -> Int {
        (n + GemmTile.nr - 1) / GemmTile.nr * GemmTile.nr * k
    }

    /// Packs A where element (m, k) is at `src[m·rowStride + k·colStride]`.
    public static func packA(_ src: UnsafePointer<Float>, m: Int, k: Int, rowStride: Int, colStride: Int,
                             into dst: UnsafeMutablePointer<Float>) {
        let mr = GemmTile.mr
        let tiles = (m + mr - 1) / mr
        for t in 0..<tiles {
            let tile = dst + t * k * mr
            for r in 0..<mr {
                let row = t * mr + r
                if row < m {
                    let s = src + row * rowStride
                    for kk in 0..<k { tile[kk * mr + r] = s[kk * colStride] }
                } else {
                    for kk in 0..<k { tile[kk * mr + r] = 0 }
                }
            }
        }
    }

    /// Packs B where element (k, n) is at `src[k·rowStride + n·colStride]`.
    public static func packB(_ src: UnsafePointer<Float>, k: Int, n: Int, rowStride: Int, colStride: Int,
                             into dst: UnsafeMutablePointer<Float>) {
        let nr = GemmTile.nr
        let panels = (n + nr - 1) / nr
        for p in 0..<panels {
            let panel = dst + p * k * nr
            let n0 = p * nr
            let nc = min(nr, n - n0)
            for kk in 0..<k {
                let d = panel + kk * nr
                let s = src + kk * rowStride + n0 * colStride
                for j in 0..<nc { d[j] = s[j * colStride] }
                for j in nc..<nr { d[j] = 0 }
            }
        }
    }
}
