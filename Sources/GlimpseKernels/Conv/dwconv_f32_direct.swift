/// Direct depthwise convolution of one channel plane with SIMD16 over output columns.
///
/// The plane is first copied into `scratch` with its zero padding, and for stride s > 1 with each
/// padded row split into s phases (columns ≡ 0, 1, … mod s), so that every window tap is a
/// contiguous, unconditional 16-float load. Bias and clamp are fused.
public enum DepthwiseConv {
    /// Floats of scratch needed for one plane.
    public static func scratchCount(_ g: ConvGeometry) -> Int {
        let rows = (g.outHeight - 1) * g.strideH + (g.kernelHeight - 1) * g.dilationH + 1
        return rows * g.strideW * phaseWidth(g)
    }

    @inline(__always)
    static func paddedWidth(_ g: ConvGeometry) -> Int {
        (g.outWidth - 1) * g.strideW + (g.kernelWidth - 1) * g.dilationW + 1
    }

    /// Length of one phase row, with 16 floats of slack for the last vector.
    @inline(__always)
    static func phaseWidth(_ g: ConvGeometry) -> Int {
        (paddedWidth(g) + g.strideW - 1) / g.strideW + 16
    }
}

/// Depthwise convolution of one channel (`g.inChannels` is ignored): out = clamp(bias + Σ w·in).
public func dwconv_f32_direct(
    input: UnsafePointer<Float>, weights: UnsafePointer<Float>, bias: Float,
    output: UnsafeMutablePointer<Float>, geometry g: ConvGeometry,
    lowerBound: Float, upperBound: Float, scratch: UnsafeMutablePointer<Float>
) {
    let s = g.strideW
    let pw = DepthwiseConv.phaseWidth(g)
    let rowStride = pw * s
    PaddedPlane.fill(input: input, geometry: g, padValue: 0, scratch: scratch)
    let lower = SIMD16<Float>(repeating: lowerBound), upper = SIMD16<Float>(repeating: upperBound)
    for oh in 0..<g.outHeight {
        let outRow = output + oh * g.outWidth
        var ow = 0
        while ow < g.outWidth {
            var acc = SIMD16<Float>(repeating: bias)
            for kh in 0..<g.kernelHeight {
                let row = scratch + (oh * g.strideH + kh * g.dilationH) * rowStride
                for kw in 0..<g.kernelWidth {
                    let c = kw * g.dilationW
                    let p = UnsafeRawPointer(row + (c % s) * pw + c / s + ow)
                    acc.addProduct(SIMD16(repeating: weights[kh * g.kernelWidth + kw]), p.loadUnaligned(as: SIMD16<Float>.self))
                }
            }
            acc.clamp(lowerBound: lower, upperBound: upper)
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
