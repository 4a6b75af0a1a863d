/// 2-D max / average pooling of one NCHW channel plane, SIMD16 over output columns, through the
/// same padded phase-split copy as the depthwise kernel (`PaddedPlane`).
public enum PoolKind: Sendable {
    case max
    /// Average; `countIncludePad` divides by the full window even where it overlaps padding.
    case average(countIncludePad: Bool)
}

public enum Pool2D {
    public static func scratchCount(_ g: ConvGeometry) -> Int {
        PaddedPlane.scratchCount(g) + g.outWidth + 18 + 2 * g.kernelHeight * g.kernelWidth
    }
}

public func pool2d_f32(input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, geometry g: ConvGeometry,
                       kind: PoolKind, scratch: UnsafeMutablePointer<Float>) {
    let s = g.strideW
    let pw = DepthwiseConv.phaseWidth(g)
    let rowStride = pw * s
    var isMax = false
    var includePad = true
    switch kind {
    case .max: isMax = true
    case .average(let cip): includePad = cip
    }
    PaddedPlane.fill(input: input, geometry: g, padValue: isMax ? -.infinity : 0, scratch: scratch)
    // Per-column count of taps inside the image (average without padding).
    let colCount = scratch + PaddedPlane.scratchCount(g)
    if !isMax {
        for ow in 0..<g.outWidth {
            var n = 0
            for kw in 0..<g.kernelWidth {
                let iw = ow * g.strideW - g.padLeft + kw * g.dilationW
                if iw >= 0 && iw < g.inWidth { n += 1 }
            }
            colCount[ow] = Float(includePad ? g.kernelWidth : n)
        }
        for ow in g.outWidth..<(g.outWidth + 16) { colCount[ow] = 1 }
    }
    let taps = g.kernelHeight * g.kernelWidth
    let offsets = UnsafeMutableRawPointer(colCount + (g.outWidth + 17) / 2 * 2).bindMemory(to: Int.self, capacity: taps)
    DepthwiseConv.tapOffsets(g, offsets)
    let initial = SIMD16<Float>(repeating: isMax ? -.infinity : 0)
    for oh in 0..<g.outHeight {
        let outRow = output + oh * g.outWidth
        let base = scratch + oh * g.strideH * rowStride
        var rowCount: Float = 1
        if !isMax {
            var rowTaps = 0
            for kh in 0..<g.kernelHeight {
                let ih = oh * g.strideH - g.padTop + kh * g.dilationH
                if ih >= 0 && ih < g.inHeight { rowTaps += 1 }
            }
            rowCount = Float(includePad ? g.kernelHeight : rowTaps)
        }
        var ow = 0
        while ow < g.outWidth {
            var acc = initial
            let p = UnsafeRawPointer(base + ow)
            if isMax {
                for t in 0..<taps { acc = simdMax(acc, (p + offsets[t] * 4).loadUnaligned(as: SIMD16<Float>.self)) }
            } else {
                for t in 0..<taps { acc += (p + offsets[t] * 4).loadUnaligned(as: SIMD16<Float>.self) }
                acc /= UnsafeRawPointer(colCount + ow).loadUnaligned(as: SIMD16<Float>.self) * rowCount
            }
            let valid = g.outWidth - ow
            if valid >= 16 {
                UnsafeMutableRawPointer(outRow + ow).storeBytes(of: acc, as: SIMD16<Float>.self)
            } else {
                for j in 0..<valid { outRow[ow + j] = acc[j] }
            }
            ow += 16
        }
    }
}

/// Scalar reference pooling over one plane.
public func pool2d_f32_reference(input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>,
                                 geometry g: ConvGeometry, kind: PoolKind) {
    for oh in 0..<g.outHeight {
        for ow in 0..<g.outWidth {
            var best = -Float.infinity
            var sum: Float = 0
            var n = 0
            for kh in 0..<g.kernelHeight {
                for kw in 0..<g.kernelWidth {
                    let ih = oh * g.strideH - g.padTop + kh * g.dilationH
                    let iw = ow * g.strideW - g.padLeft + kw * g.dilationW
                    guard ih >= 0, ih < g.inHeight, iw >= 0, iw < g.inWidth else { continue }
                    let v = input[ih * g.inWidth + iw]
                    best = max(best, v)
                    sum += v
                    n += 1
                }
            }
            switch kind {
            case .max: output[oh * g.outWidth + ow] = best
            case .average(let cip):
                let d = cip ? g.kernelHeight * g.kernelWidth : n
                output[oh * g.outWidth + ow] = sum / Float(max(d, 1))
            }
        }
    }
}
