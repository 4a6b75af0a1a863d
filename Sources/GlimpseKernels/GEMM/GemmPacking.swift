/// Packing of GEMM operands into the layouts `f32_gemm_6x32_avx512` reads.
///
/// Packed A: K blocks of `GemmDriver.kBlock` (the last one shorter), each holding its `kc × 6` slice
/// of every 6-row tile: element (row r, k) of tile `t`, with k in the block starting at `k0`, at
/// `k0·M6 + t·kc·6 + (k − k0)·6 + r`, where M6 is M rounded up to a multiple of 6
/// (`aOffset(tile:k0:kc:m:)`). The driver then streams one contiguous run of A per K block. With K
/// of at most one block this is tile-major: tile `t` holds `K × 6` floats at `t·K·6`.
/// Packed B: panels of 32 columns; panel `p` holds `K × 32` floats, element (k, col j) at
/// `p·K·32 + k·32 + j`. Both are zero-padded past M or N.
public enum GemmPacking {
    public static func packedACount(m: Int, k: Int) -> Int {
        (m + GemmTile.mr - 1) / GemmTile.mr * GemmTile.mr * k
    }

    public static func packedBCount(n: Int, k: Int) -> Int {
        (n + GemmTile.nr - 1) / GemmTile.nr * GemmTile.nr * k
    }

    /// Offset in packed A of tile `tile`'s slice of the K block that starts at `k0` and is `kc` long.
    @inline(__always)
    public static func aOffset(tile: Int, k0: Int, kc: Int, m: Int) -> Int {
        let mr = GemmTile.mr
        return k0 &* ((m &+ mr &- 1) / mr &* mr) &+ tile &* kc &* mr
    }

    /// Packs A where element (m, k) is at `src[m·rowStride + k·colStride]`.
    public static func packA(_ src: UnsafePointer<Float>, m: Int, k: Int, rowStride: Int, colStride: Int,
                             into dst: UnsafeMutablePointer<Float>) {
        let mr = GemmTile.mr
        let tiles = (m + mr - 1) / mr
        var k0 = 0
        while k0 < k {
            let kc = min(GemmDriver.kBlock, k - k0)
            for t in 0..<tiles {
                let tile = dst + aOffset(tile: t, k0: k0, kc: kc, m: m)
                for r in 0..<mr {
                    let row = t * mr + r
                    if row < m {
                        let s = src + row * rowStride + k0 * colStride
                        for kk in 0..<kc { tile[kk * mr + r] = s[kk * colStride] }
                    } else {
                        for kk in 0..<kc { tile[kk * mr + r] = 0 }
                    }
                }
            }
            k0 += kc
        }
    }

    /// The inverse of `packA` for a row-major destination: element (m, k) to `dst[m·k + k]`.
    public static func unpackA(_ packed: UnsafePointer<Float>, m: Int, k: Int, into dst: UnsafeMutablePointer<Float>) {
        let mr = GemmTile.mr
        var k0 = 0
        while k0 < k {
            let kc = min(GemmDriver.kBlock, k - k0)
            for row in 0..<m {
                let tile = packed + aOffset(tile: row / mr, k0: k0, kc: kc, m: m) + row % mr
                for kk in 0..<kc { dst[row * k + k0 + kk] = tile[kk * mr] }
            }
            k0 += kc
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
