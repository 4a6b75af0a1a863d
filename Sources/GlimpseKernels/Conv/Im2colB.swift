/// GEMM B operand that is the im2col matrix of one NCHW image, packed panel by panel without
/// materializing the whole matrix. Row k = (ci·KH + kh)·KW + kw, column = oh·OW + ow.
public struct Im2colB: GemmBSource {
    public let input: UnsafePointer<Float>
    public let g: ConvGeometry

    public init(input: UnsafePointer<Float>, geometry: ConvGeometry) {
        self.input = input
        self.g = geometry
    }

    @inline(__always)
    public func panel(k0: Int, kc: Int, n0: Int, nc: Int, scratch: UnsafeMutablePointer<Float>) -> UnsafePointer<Float> {
        let nr = GemmTile.nr
        let khw = g.kernelHeight * g.kernelWidth
        let ow0 = n0 % g.outWidth, oh0 = n0 / g.outWidth
        for kk in 0..<kc {
            let kIndex = k0 + kk
            let ci = kIndex / khw
            let rem = kIndex - ci * khw
            let kh = rem / g.kernelWidth
            let kw = rem - kh * g.kernelWidth
            let dst = scratch + kk * nr
            let plane = input + ci * g.inPixels
            var j = 0
            var oh = oh0, ow = ow0
            while j < nc {
                let run = min(nc - j, g.outWidth - ow)
                let ih = oh * g.strideH - g.padTop + kh * g.dilationH
                let d = dst + j
                if ih < 0 || ih >= g.inHeight {
                    for t in 0..<run { d[t] = 0 }
                } else {
                    let row = plane + ih * g.inWidth
                    let iw0 = ow * g.strideW - g.padLeft + kw * g.dilationW
                    if g.strideW == 1 {
                        let lo = min(run, max(0, -iw0))
                        let hi = max(lo, min(run, g.inWidth - iw0))
                        for t in 0..<lo { d[t] = 0 }
                        let s = row + iw0
                        for t in lo..<hi { d[t] = s[t] }
                        for t in hi..<run { d[t] = 0 }
                    } else {
                        for t in 0..<run {
                            let iw = iw0 + t * g.strideW
                            d[t] = (iw >= 0 && iw < g.inWidth) ? row[iw] : 0
                        }
                    }
                }
                j += run
                ow = 0
                oh += 1
            }
            for t in nc..<nr { dst[t] = 0 }
        }
        return UnsafePointer(scratch)
    }
}
