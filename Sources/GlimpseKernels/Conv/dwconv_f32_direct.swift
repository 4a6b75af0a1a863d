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
    let taps = g.kernelHeight * g.kernelWidth
    let vectorsPerRow = (g.outWidth + 15) / 16
    let jobs = g.outHeight * vectorsPerRow
    withUnsafeTemporaryAllocation(of: Int.self, capacity: taps) { offsets in
        // Offset of each tap from an output vector's window origin in the padded, phase-split copy.
        for kh in 0..<g.kernelHeight {
            for kw in 0..<g.kernelWidth {
                let c = kw * g.dilationW
                offsets[kh * g.kernelWidth + kw] = kh * g.dilationH * rowStride + (c % s) * pw + c / s
            }
        }
        @inline(__always) func origin(_ job: Int) -> (UnsafePointer<Float>, UnsafeMutablePointer<Float>, Int) {
            let oh = job / vectorsPerRow, ow = (job - oh * vectorsPerRow) * 16
            return (UnsafePointer(scratch + oh * g.strideH * rowStride + ow), output + oh * g.outWidth + ow, g.outWidth - ow)
        }
        @inline(__always) func store(_ v: SIMD16<Float>, _ dst: UnsafeMutablePointer<Float>, _ valid: Int) {
            let r = simdClamp(v, lower, upper)
            if valid >= 16 {
                UnsafeMutableRawPointer(dst).storeBytes(of: r, as: SIMD16<Float>.self)
            } else {
                for j in 0..<valid { dst[j] = r[j] }
            }
        }
        // Four output vectors at a time: four independent FMA chains share each weight broadcast.
        var job = 0
        while job + 4 <= jobs {
            let (s0, d0, v0) = origin(job), (s1, d1, v1) = origin(job + 1)
            let (s2, d2, v2) = origin(job + 2), (s3, d3, v3) = origin(job + 3)
            var a0 = SIMD16<Float>(repeating: bias), a1 = a0, a2 = a0, a3 = a0
            for t in 0..<taps {
                let w = SIMD16<Float>(repeating: weights[t])
                let o = offsets[t]
                a0.addProduct(w, UnsafeRawPointer(s0 + o).loadUnaligned(as: SIMD16<Float>.self))
                a1.addProduct(w, UnsafeRawPointer(s1 + o).loadUnaligned(as: SIMD16<Float>.self))
                a2.addProduct(w, UnsafeRawPointer(s2 + o).loadUnaligned(as: SIMD16<Float>.self))
                a3.addProduct(w, UnsafeRawPointer(s3 + o).loadUnaligned(as: SIMD16<Float>.self))
            }
            store(a0, d0, v0)
            store(a1, d1, v1)
            store(a2, d2, v2)
            store(a3, d3, v3)
            job += 4
        }
        while job < jobs {
            let (s0, d0, v0) = origin(job)
            var a0 = SIMD16<Float>(repeating: bias)
            for t in 0..<taps {
                a0.addProduct(SIMD16<Float>(repeating: weights[t]), UnsafeRawPointer(s0 + offsets[t]).loadUnaligned(as: SIMD16<Float>.self))
            }
            store(a0, d0, v0)
            job += 1
        }
    }
}
