/// GEMM B operand that is the im2col matrix of one NCHW image, packed panel by panel without
/// materializing the whole matrix. Row k = (ci·KH + kh)·KW + kw, column = oh·OW + ow.
public struct Im2colPanelSource: GemmBSource {
    public let input: UnsafePointer<Float>
    public let g: ConvGeometry
    /// Offsets from `input` that may be read: whole-vector loads of a shifted plane run past its
    /// edges (into lanes that are masked off), so they are taken only where they stay inside this
    /// range; by default the image's own planes, wider when the caller knows the whole tensor.
    public let readable: Range<Int>

    public init(input: UnsafePointer<Float>, geometry: ConvGeometry, readable: Range<Int>? = nil) {
        self.input = input
        self.g = geometry
        self.readable = readable ?? 0..<(geometry.inChannels * geometry.inPixels)
    }

    @inline(__always)
    public func panel(k0: Int, kc: Int, n0: Int, nc: Int, scratch: UnsafeMutablePointer<Float>) -> UnsafePointer<Float> {
        if g.isShiftedPlane { return shiftedPanel(k0: k0, kc: kc, n0: n0, nc: nc, scratch: scratch) }
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

    /// Stride 1 with the output as wide as the input: im2col row (ci, kh, kw) is the input plane
    /// shifted by dy·W + dx (dy = kh·dilation − padTop, dx = kw·dilation − padLeft), with the lanes
    /// whose input row or column falls outside the plane set to zero. A panel row is then two vector
    /// loads and a masked select, not a run of short copies.
    @inline(__always)
    func shiftedPanel(k0: Int, kc: Int, n0: Int, nc: Int, scratch: UnsafeMutablePointer<Float>) -> UnsafePointer<Float> {
        let khw = g.kernelHeight * g.kernelWidth
        let width = g.inWidth, pixels = g.inPixels
        // The panel's 32 columns as two vectors of output pixel coordinates.
        let lanes0 = ShiftedLanes(first: n0, count: nc, width: width)
        let lanes1 = ShiftedLanes(first: n0 + 16, count: nc - 16, width: width)
        let nr = GemmTile.nr
        // Tap by tap, so each tap's lane masks are computed once for all its channels in the block:
        // rows k0..<k0+kc are (ci, tap) with k = ci·KH·KW + tap.
        // Nested tap loops, and no division for a block holding all of K: a 64-bit integer divide
        // costs tens of cycles, more than the row it would index.
        let whole = k0 == 0 && kc == g.patchSize
        for kh in 0..<g.kernelHeight { for kw in 0..<g.kernelWidth {
            let tap = kh &* g.kernelWidth &+ kw
            let ciLo = whole ? 0 : k0 > tap ? (k0 &- tap &+ khw &- 1) / khw : 0
            // Inclusive; below ciLo when the block misses this tap.
            let ciHi = whole ? g.inChannels &- 1 : (k0 &+ kc &- 1 &- tap) / khw
            if k0 &+ kc &- 1 < tap || ciHi < ciLo { continue }
            let dy = kh &* g.dilationH &- g.padTop, dx = kw &* g.dilationW &- g.padLeft
            let in0 = lanes0.inside(dy: dy, dx: dx, height: g.inHeight, width: width)
            let in1 = lanes1.inside(dy: dy, dx: dx, height: g.inHeight, width: width)
            let first = n0 &+ dy &* width &+ dx
            var start = ciLo &* pixels &+ first
            var out = scratch + (ciLo &* khw &+ tap &- k0) &* nr
            let outStep = khw &* nr
            for _ in ciLo...ciHi {
                if start >= readable.lowerBound && start &+ nr <= readable.upperBound {
                    let s = UnsafeRawPointer(input + start)
                    let v0 = s.loadUnaligned(as: SIMD16<Float>.self), v1 = s.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
                    let d = UnsafeMutableRawPointer(out)
                    d.storeBytes(of: SIMD16<Float>().replacing(with: v0, where: in0), as: SIMD16<Float>.self)
                    d.storeBytes(of: SIMD16<Float>().replacing(with: v1, where: in1), toByteOffset: 64, as: SIMD16<Float>.self)
                } else {
                    // A whole-vector load would leave the readable memory: lane by lane (rare: the
                    // first and last planes of the tensor).
                    for t in 0..<nr {
                        let j = n0 + t
                        let ih = j / width + dy, iw = j % width + dx
                        let inside = t < nc && ih >= 0 && ih < g.inHeight && iw >= 0 && iw < width
                        out[t] = inside ? input[start + t] : 0
                    }
                }
                start &+= pixels
                out += outStep
            }
        } }
        return UnsafePointer(scratch)
    }
}
