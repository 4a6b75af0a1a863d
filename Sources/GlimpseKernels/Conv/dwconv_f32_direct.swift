/// Direct depthwise convolution of one channel plane with SIMD16 over output columns.
///
/// The plane is first copied into `scratch` with its zero padding, and for stride s > 1 with each
/// padded row split into s phases (columns ≡ 0, 1, … mod s), so that every window tap is a
/// contiguous, unconditional 16-float load. Bias, requantization, residual and activation are
/// fused into the store (`GemmEpilogue` with row 0, column = output pixel index).
public enum DepthwiseConv {
    /// Floats of scratch needed for one plane.
    public static func scratchCount(_ g: ConvGeometry) -> Int {
        PaddedPlane.scratchCount(g) + 2 * g.kernelHeight * g.kernelWidth + 2
    }

    @inline(__always)
    static func paddedWidth(_ g: ConvGeometry) -> Int {
        (g.outWidth - 1) * g.strideW + (g.kernelWidth - 1) * g.dilationW + 1
    }

    /// Length of one phase row: a multiple of 16, with at least 16 floats of slack for the last vector.
    @inline(__always)
    static func phaseWidth(_ g: ConvGeometry) -> Int {
        ((paddedWidth(g) + g.strideW - 1) / g.strideW + 15) / 16 * 16 + 16
    }

    /// Offset of each tap from an output vector's window origin in the padded, phase-split copy.
    @inline(__always)
    static func tapOffsets(_ g: ConvGeometry, _ offsets: UnsafeMutablePointer<Int>) {
        let s = g.strideW, pw = phaseWidth(g), rowStride = pw * s
        var t = 0
        for kh in 0..<g.kernelHeight {
            var phase = 0, index = 0
            for _ in 0..<g.kernelWidth {
                offsets[t] = kh * g.dilationH * rowStride + phase * pw + index
                t += 1
                phase += g.dilationW
                while phase >= s { phase -= s; index += 1 }
            }
        }
    }
}

/// Depthwise convolution of one channel (`g.inChannels` is ignored): out = clamp(bias + Σ w·in).
public func dwconv_f32_direct(
    input: UnsafePointer<Float>, weights: UnsafePointer<Float>, bias: Float,
    output: UnsafeMutablePointer<Float>, geometry g: ConvGeometry,
    lowerBound: Float, upperBound: Float, scratch: UnsafeMutablePointer<Float>
) {
    dwconv_f32_direct(input: input, weights: weights, bias: bias, output: output, geometry: g,
                      epilogue: GemmEpilogue(lowerBound: lowerBound, upperBound: upperBound), scratch: scratch)
}

/// Depthwise convolution of one channel with a fused epilogue applied as row 0, column = pixel
/// index (`rowBias` is ignored: pass the bias; `residual`, if any, is this plane's residual).
public func dwconv_f32_direct(
    input: UnsafePointer<Float>, weights: UnsafePointer<Float>, bias: Float,
    output: UnsafeMutablePointer<Float>, geometry g: ConvGeometry,
    epilogue e0: GemmEpilogue, scratch: UnsafeMutablePointer<Float>
) {
    var e = e0
    e.rowBias = nil
    let s = g.strideW
    let pw = DepthwiseConv.phaseWidth(g)
    let rowStride = pw * s
    PaddedPlane.fill(input: input, geometry: g, padValue: 0, scratch: scratch)
    let taps = g.kernelHeight * g.kernelWidth
    let offsets = UnsafeMutableRawPointer(scratch + PaddedPlane.scratchCount(g)).bindMemory(to: Int.self, capacity: taps)
    DepthwiseConv.tapOffsets(g, offsets)
    let ow = g.outWidth
    let biasV = SIMD16<Float>(repeating: bias)
    let out = DepthwiseStore(output: output, epilogue: e)
    for oh in 0..<g.outHeight {
        let base = UnsafePointer(scratch + oh * g.strideH * rowStride)
        let rowPixel = oh * ow
        var x = 0
        // Four output vectors at a time: four independent FMA chains share each weight broadcast.
        while x + 64 <= ow {
            let p = base + x
            var a0 = biasV, a1 = biasV, a2 = biasV, a3 = biasV
            for t in 0..<taps {
                let w = SIMD16<Float>(repeating: weights[t])
                let r = UnsafeRawPointer(p + offsets[t])
                a0.addProduct(w, r.loadUnaligned(as: SIMD16<Float>.self))
                a1.addProduct(w, r.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self))
                a2.addProduct(w, r.loadUnaligned(fromByteOffset: 128, as: SIMD16<Float>.self))
                a3.addProduct(w, r.loadUnaligned(fromByteOffset: 192, as: SIMD16<Float>.self))
            }
            out.full(a0, rowPixel + x)
            out.full(a1, rowPixel + x + 16)
            out.full(a2, rowPixel + x + 32)
            out.full(a3, rowPixel + x + 48)
            x += 64
        }
        if x + 32 <= ow {
            let p = base + x
            var a0 = biasV, a1 = biasV
            for t in 0..<taps {
                let w = SIMD16<Float>(repeating: weights[t])
                let r = UnsafeRawPointer(p + offsets[t])
                a0.addProduct(w, r.loadUnaligned(as: SIMD16<Float>.self))
                a1.addProduct(w, r.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self))
            }
            out.full(a0, rowPixel + x)
            out.full(a1, rowPixel + x + 16)
            x += 32
        }
        while x < ow {
            let p = base + x
            var a0 = biasV
            for t in 0..<taps {
                a0.addProduct(SIMD16<Float>(repeating: weights[t]),
                              UnsafeRawPointer(p + offsets[t]).loadUnaligned(as: SIMD16<Float>.self))
            }
            if x + 16 <= ow {
                out.full(a0, rowPixel + x)
            } else if oh + 1 < g.outHeight && x + 16 <= ow + ow {
                // The extra lanes spill into the next output row, which is stored after this one.
                out.full(a0, rowPixel + x)
            } else {
                out.partial(a0, rowPixel + x, ow - x)
            }
            x += 16
        }
    }
}

/// Epilogue and store of one depthwise output vector.
@usableFromInline
struct DepthwiseStore {
    let output: UnsafeMutablePointer<Float>
    let epilogue: GemmEpilogue

    @inline(__always)
    init(output: UnsafeMutablePointer<Float>, epilogue: GemmEpilogue) {
        self.output = output
        self.epilogue = epilogue
    }

    @_transparent
    func full(_ v: SIMD16<Float>, _ pixel: Int) {
        UnsafeMutableRawPointer(output + pixel).storeBytes(of: epilogue.apply(v, row: 0, col: pixel), as: SIMD16<Float>.self)
    }

    @inline(never)
    func partial(_ v: SIMD16<Float>, _ pixel: Int, _ valid: Int) {
        if epilogue.residual == nil {
            let r = epilogue.apply(v, row: 0, col: pixel)
            for j in 0..<valid { output[pixel + j] = r[j] }
        } else {
            for j in 0..<valid { output[pixel + j] = epilogue.apply(v[j], row: 0, col: pixel + j) }
        }
    }
}
