/// Pointwise (1×1) convolutions over a whole batch as one GEMM.
///
/// Per image, a 1×1 convolution has `outPixels` GEMM columns, cut into tiles of 32: a 7×7 plane
/// (49 columns) runs two tiles, 64 columns computed for 49 stored, and a 14×14 plane 224 for 196. Over
/// a batch the columns of all images follow each other (column q is pixel q mod P of image q / P), so
/// only the batch's last tile is short: 8 images of 7×7 run 416 columns for 392. A tile that crosses
/// an image boundary is packed from both images and stored through a small output tile.
extension QS8Conv {
    /// Tiles of 32 columns over the batch's pointwise GEMM.
    public func batchTiles(batch: Int) -> Int { (batch * geometry.outPixels + QS8Gemm.nr - 1) / QS8Gemm.nr }

    /// Scratch bytes per thread for `runBatchTile`: the panel and one 8 × 32 output tile.
    public var batchScratchBytes: Int { panelBytes + QS8Gemm.mr * QS8Gemm.nr }

    /// Columns `32·tile ..< 32·tile + 32` of the batch's pointwise GEMM (`geometry.isPointwise`), output
    /// rows `rows` (their lower bound a multiple of 8). `x` is `[batch][Cin][P]`, `y` is `[batch][Cout][P]`.
    @inline(__always)
    public func runBatchTile(_ tile: Int, batch: Int, rows: Range<Int>, x: UnsafePointer<UInt8>, y: UnsafeMutablePointer<UInt8>,
                             packedA: UnsafePointer<Int8>, requant rq: RequantPointers, scratch: UnsafeMutablePointer<UInt8>) {
        let pixels = geometry.outPixels
        let inImage = geometry.inChannels * pixels, outImage = outChannels * pixels
        let q0 = tile * QS8Gemm.nr
        let n = min(QS8Gemm.nr, batch * pixels - q0)
        guard n > 0 else { return }
        let first = q0 / pixels, p0 = q0 % pixels
        let groups = QS8Gemm.kGroups(k), aRow = QS8Gemm.aRowBytes(k: k, wide: wide)
        if p0 + n <= pixels {
            // Within one image: the kernel stores straight into the output rows.
            packPointwise(x: x + first * inImage, p0: p0, n: n, panel: scratch)
            if wide { QS8Gemm.widenPanel(scratch, groups: groups) }
            var row = rows.lowerBound
            while row < rows.upperBound {
                QS8Gemm.kernel(a: packedA + row * aRow, panel: scratch, groups: groups, rows: min(QS8Gemm.mr, rows.upperBound - row),
                               row0: row, n: n, c: y + first * outImage + row * pixels + p0, ldc: pixels, requant: rq, wide: wide)
                row += QS8Gemm.mr
            }
            return
        }
        // Across images: one stretch of columns per image, packed side by side.
        var j = 0
        while j < n {
            let q = q0 + j, count = min(n - j, pixels - q % pixels)
            packPointwise(x: x + (q / pixels) * inImage, p0: q % pixels, n: count, panel: scratch, column: j)
            j += count
        }
        if wide { QS8Gemm.widenPanel(scratch, groups: groups) }
        let tileOut = scratch + panelBytes
        var row = rows.lowerBound
        while row < rows.upperBound {
            let height = min(QS8Gemm.mr, rows.upperBound - row)
            QS8Gemm.kernel(a: packedA + row * aRow, panel: scratch, groups: groups, rows: height,
                           row0: row, n: n, c: tileOut, ldc: QS8Gemm.nr, requant: rq, wide: wide)
            var j = 0
            while j < n {
                let q = q0 + j, count = min(n - j, pixels - q % pixels)
                let out = y + (q / pixels) * outImage + row * pixels + q % pixels
                for r in 0..<height {
                    (out + r * pixels).update(from: tileOut + r * QS8Gemm.nr + j, count: count)
                }
                j += count
            }
            row += QS8Gemm.mr
        }
    }
}
