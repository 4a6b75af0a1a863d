/// Writes rows of the full im2col matrix (K = Cin·KH·KW rows × N = OH·OW columns, row-major) of one
/// NCHW image. Each row is a shifted copy of an input plane, so stride-1 rows are long contiguous
/// copies; the GEMM then reads it through `RowMajorB`.
public enum Im2colMatrix {
    /// Largest matrix (floats) worth materializing; bigger convolutions pack panels directly.
    public static let maxFloats = 6 << 20

    public static func fill(input: UnsafePointer<Float>, geometry g: ConvGeometry, rows: Range<Int>,
                            into dst: UnsafeMutablePointer<Float>) {
        let khw = g.kernelHeight * g.kernelWidth
        let n = g.outPixels
        for k in rows {
            let ci = k / khw, rem = k % khw
            let kh = rem / g.kernelWidth, kw = rem % g.kernelWidth
            let plane = input + ci * g.inPixels
            let out = dst + k * n
            let iw0 = kw * g.dilationW - g.padLeft
            for oh in 0..<g.outHeight {
                let ih = oh * g.strideH - g.padTop + kh * g.dilationH
                let d = out + oh * g.outWidth
                if ih < 0 || ih >= g.inHeight {
                    d.update(repeating: 0, count: g.outWidth)
                    continue
                }
                let row = plane + ih * g.inWidth
                if g.strideW == 1 {
                    let lo = min(g.outWidth, max(0, -iw0))
                    let hi = max(lo, min(g.outWidth, g.inWidth - iw0))
                    if lo > 0 { d.update(repeating: 0, count: lo) }
                    (d + lo).update(from: row + iw0 + lo, count: hi - lo)
                    if hi < g.outWidth { (d + hi).update(repeating: 0, count: g.outWidth - hi) }
                } else {
                    for ow in 0..<g.outWidth {
                        let iw = ow * g.strideW + iw0
                        d[ow] = (iw >= 0 && iw < g.inWidth) ? row[iw] : 0
                    }
                }
            }
        }
    }
}
