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
                    // Valid output columns: iw = ow·s + iw0 in [0, inWidth).
                    let sw = g.strideW
                    let lo = min(g.outWidth, max(0, (-iw0 + sw - 1) / sw))
                    let hi = max(lo, min(g.outWidth, (g.inWidth - iw0 + sw - 1) / sw))
                    for ow in 0..<lo { d[ow] = 0 }
                    var ow = lo
                    if sw == 2 {
                        // Even lanes of 32 consecutive inputs; the last input read is iw0 + 2·ow + 31 < inWidth.
                        while ow + 16 <= hi && iw0 + 2 * ow + 32 <= g.inWidth {
                            let v = UnsafeRawPointer(row + iw0 + 2 * ow).loadUnaligned(as: SIMD32<Float>.self)
                            UnsafeMutableRawPointer(d + ow).storeBytes(of: v.evenHalf, as: SIMD16<Float>.self)
                            ow += 16
                        }
                    }
                    while ow < hi {
                        d[ow] = row[ow * sw + iw0]
                        ow += 1
                    }
                    for ow in hi..<g.outWidth { d[ow] = 0 }
                }
            }
        }
    }
}
