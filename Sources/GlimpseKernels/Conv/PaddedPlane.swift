/// Copies one input plane into a padded buffer where every window tap of a convolution or pooling
/// is an unconditional contiguous load: rows are `strideW` phases of `DepthwiseConv.phaseWidth`
/// floats (column c of the padded row lands in phase c % s at index c / s).
public enum PaddedPlane {
    public static func fill(input: UnsafePointer<Float>, geometry g: ConvGeometry, padValue: Float,
                            scratch: UnsafeMutablePointer<Float>) {
        let s = g.strideW
        let pw = DepthwiseConv.phaseWidth(g)
        let rowStride = pw * s
        let paddedRows = (g.outHeight - 1) * g.strideH + (g.kernelHeight - 1) * g.dilationH + 1
        let paddedCols = DepthwiseConv.paddedWidth(g)
        for r in 0..<paddedRows {
            let ih = r - g.padTop
            let dstRow = scratch + r * rowStride
            if ih < 0 || ih >= g.inHeight {
                dstRow.update(repeating: padValue, count: rowStride)
                continue
            }
            let src = input + ih * g.inWidth
            if s == 1 {
                let lo = min(paddedCols, g.padLeft)
                let hi = max(lo, min(paddedCols, g.padLeft + g.inWidth))
                for c in 0..<lo { dstRow[c] = padValue }
                (dstRow + lo).update(from: src + (lo - g.padLeft), count: hi - lo)
                for c in hi..<pw { dstRow[c] = padValue }
            } else {
                dstRow.update(repeating: padValue, count: rowStride)
                let lo = min(paddedCols, g.padLeft)
                let hi = max(lo, min(paddedCols, g.padLeft + g.inWidth))
                for phase in 0..<s {
                    let d = dstRow + phase * pw
                    var idx = (lo - phase + s - 1) / s   // first idx with idx·s + phase ≥ lo
                    var c = idx * s + phase
                    while c < hi {
                        d[idx] = src[c - g.padLeft]
                        idx += 1
                        c += s
                    }
                }
            }
        }
    }
}
