/// Writes rows of the full im2col matrix (K = Cin·KH·KW rows × N = OH·OW columns, row-major) of one
/// NCHW image. Each row is a shifted copy of an input plane, so stride-1 rows are long contiguous
/// copies; the GEMM then reads it through `RowMajorB`.
public enum Im2colMatrix {
    /// Largest matrix (floats) worth materializing; bigger convolutions pack panels directly.
    public static let maxFloats = 6 << 20

    /// Floats from one matrix row to the next: the output's pixels, plus 16 of slack for a
    /// horizontal stride of 2, which `fill` then writes 16 columns at a time with whole vectors.
    public static func rowStride(_ g: ConvGeometry) -> Int { g.outPixels + (g.strideW == 2 ? 16 : 0) }

    /// Fills rows `rows`, columns `columns` (output pixels; all of them by default) of the matrix,
    /// whose rows are `rowStride(g)` floats apart. `readable` is what may be read around `input`
    /// (see `Im2colPanelSource.readable`; the image's planes by default).
    public static func fill(input: UnsafePointer<Float>, geometry g: ConvGeometry, rows: Range<Int>,
                            columns: Range<Int>? = nil, readable: Range<Int>? = nil, into dst: UnsafeMutablePointer<Float>) {
        let khw = g.kernelHeight * g.kernelWidth
        let n = g.outPixels, ld = rowStride(g)
        let columns = columns ?? 0..<n
        guard !columns.isEmpty else { return }
        if g.strideW == 2 {
            fillStride2(input: input, geometry: g, rows: rows, columns: columns,
                        writable: columns.upperBound == n ? ld : columns.upperBound,
                        readable: readable ?? 0..<(g.inChannels * g.inPixels), rowStride: ld, into: dst)
            return
        }
        let firstRow = columns.lowerBound / g.outWidth, lastRow = (columns.upperBound - 1) / g.outWidth
        for k in rows {
            let ci = k / khw, rem = k % khw
            let kh = rem / g.kernelWidth, kw = rem % g.kernelWidth
            let plane = input + ci * g.inPixels
            let out = dst + k * ld
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
                    while ow < hi {
                        d[ow] = row[ow * sw + iw0]
                        ow += 1
                    }
                }
                if hi < b { (d + hi).update(repeating: 0, count: b - hi) }
            }
        }
    }

    /// A horizontal stride of 2, output row by output row, 16 columns at a time: the even lanes of
    /// 32 consecutive inputs, with the lanes outside the input row or past the output row set to
    /// zero. A vector is stored whole where what it writes past its columns is still inside
    /// `writable` (columns of the next output row, written after it, or the matrix row's slack),
    /// else lane by lane. Before, rows narrower than 16 (ResNet-50's 14 → 7 layer) were gathered
    /// float by float, 18 % of that layer's time.
    static func fillStride2(input: UnsafePointer<Float>, geometry g: ConvGeometry, rows: Range<Int>, columns: Range<Int>,
                            writable: Int, readable: Range<Int>, rowStride: Int, into dst: UnsafeMutablePointer<Float>) {
        let khw = g.kernelHeight &* g.kernelWidth
        let lane = SIMD16<Float>(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
        let lastInput = Float(g.inWidth - 1), lastOutput = Float(g.outWidth - 1)
        let firstRow = columns.lowerBound / g.outWidth, lastRow = (columns.upperBound - 1) / g.outWidth
        for k in rows {
            let ci = k / khw, rem = k % khw
            let kh = rem / g.kernelWidth, kw = rem % g.kernelWidth
            let iw0 = kw &* g.dilationW &- g.padLeft
            let out = dst + k &* rowStride
            for oh in firstRow...lastRow {
                let rowFirst = oh &* g.outWidth
                let a = max(0, columns.lowerBound &- rowFirst), b = min(g.outWidth, columns.upperBound &- rowFirst)
                let ih = oh &* g.strideH &- g.padTop &+ kh &* g.dilationH
                let inRow = ih >= 0 && ih < g.inHeight
                let rowStart = ci &* g.inPixels &+ ih &* g.inWidth
                var ow = a
                while ow < b {
                    var v = SIMD16<Float>()
                    if inRow {
                        // Lane j reads input column iw0 + 2·(ow + j). The three bounds as one float
                        // compare (integer vector compares combined with .& compiled lane by lane).
                        let cols = lane + Float(ow)
                        let iw = cols * 2 + Float(iw0)
                        let inside = simdMin(simdMin(iw, lastInput - iw), lastOutput - cols) .>= 0
                        let first = rowStart &+ iw0 &+ 2 &* ow
                        if first >= readable.lowerBound && first &+ 32 <= readable.upperBound {
                            v = UnsafeRawPointer(input + first).loadUnaligned(as: SIMD32<Float>.self).evenHalf
                        } else {
                            for j in 0..<16 where inside[j] { v[j] = input[first &+ 2 &* j] }
                        }
                        v = SIMD16<Float>().replacing(with: v, where: inside)
                    }
                    let d = out + (rowFirst &+ ow)
                    if rowFirst &+ ow &+ 16 <= writable {
                        UnsafeMutableRawPointer(d).storeBytes(of: v, as: SIMD16<Float>.self)
                    } else {
                        for j in 0..<min(16, b &- ow) { d[j] = v[j] }
                    }
                    ow &+= 16
                }
            }
        }
    }
}
