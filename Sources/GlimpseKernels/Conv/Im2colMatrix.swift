/// Writes rows of the full im2col matrix (K = Cin·KH·KW rows × N = OH·OW columns, row-major) of one
/// NCHW image. Each row is a shifted copy of an input plane, so stride-1 rows are long contiguous
/// copies; the GEMM then reads it through `RowMajorB`.
public enum Im2colMatrix {
    /// Largest matrix (floats) worth materializing; bigger convolutions pack panels directly.
    public static let maxFloats = 6 << 20

    /// Fills rows `rows`, columns `columns` (output pixels; all of them by default) of the matrix.
    public static func fill(input: UnsafePointer<Float>, geometry g: ConvGeometry, rows: Range<Int>,
                            columns: Range<Int>? = nil, into dst: UnsafeMutablePointer<Float>) {
        let khw = g.kernelHeight * g.kernelWidth
        let n = g.outPixels
        let columns = columns ?? 0..<n
        guard !columns.isEmpty else { return }
        let firstRow = columns.lowerBound / g.outWidth, lastRow = (columns.upperBound - 1) / g.outWidth
        for k in rows {
            let ci = k / khw, rem = k % khw
            let kh = rem / g.kernelWidth, kw = rem % g.kernelWidth
            let plane = input + ci * g.inPixels
            let out = dst + k * n
            let iw0 = kw * g.dilationW - g.padLeft
            // Valid output columns of every row: iw = ow·s + iw0 in [0, inWidth).
            let sw = g.strideW
            let valid0 = min(g.outWidth, max(0, (-iw0 + sw - 1) / sw))
            let valid1 = max(valid0, min(g.outWidth, (g.inWidth - iw0 + sw - 1) / sw))
            for oh in firstRow...lastRow {
                // This row's part of `columns`.
                let a = max(0, columns.lowerBound - oh * g.outWidth)
                let b = min(g.outWidth, columns.upperBound - oh * g.outWidth)
                let ih = oh * g.strideH - g.padTop + kh * g.dilationH
                let d = out + oh * g.outWidth
                if ih < 0 || ih >= g.inHeight {
                    (d + a).update(repeating: 0, count: b - a)
                    continue
                }
                let row = plane + ih * g.inWidth
                let lo = min(b, max(a, valid0)), hi = max(lo, min(b, valid1))
                if lo > a { (d + a).update(repeating: 0, count: lo - a) }
                if sw == 1 {
                    (d + lo).update(from: row + iw0 + lo, count: hi - lo)
                } else {
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
                }
                if hi < b { (d + hi).update(repeating: 0, count: b - hi) }
            }
        }
    }
}
