/// Copies one input plane into a padded buffer where every window tap of a convolution or pooling
/// is an unconditional contiguous load: rows are `strideW` phases of `DepthwiseConv.phaseWidth`
/// floats (column c of the padded row lands in phase c % s at index c / s).
///
/// Stride 1 rows are a SIMD copy between pad runs; stride 2 rows are assembled contiguously in a
/// line buffer and split into even/odd phases with SIMD32 deinterleaves; larger strides are scalar.
public enum PaddedPlane {
    /// Floats of scratch `fill` needs: the padded rows plus a line buffer for stride 2.
    public static func scratchCount(_ g: ConvGeometry) -> Int {
        paddedRows(g) * g.strideW * DepthwiseConv.phaseWidth(g) + lineCount(g)
    }

    @inline(__always)
    static func paddedRows(_ g: ConvGeometry) -> Int {
        (g.outHeight - 1) * g.strideH + (g.kernelHeight - 1) * g.dilationH + 1
    }

    @inline(__always)
    static func lineCount(_ g: ConvGeometry) -> Int {
        g.strideW == 2 ? 2 * DepthwiseConv.phaseWidth(g) + 32 : 0
    }

    public static func fill(input: UnsafePointer<Float>, geometry g: ConvGeometry, padValue: Float,
                            scratch: UnsafeMutablePointer<Float>) {
        let s = g.strideW
        let pw = DepthwiseConv.phaseWidth(g)
        let rowStride = pw * s
        let rows = paddedRows(g)
        let paddedCols = DepthwiseConv.paddedWidth(g)
        // Input columns that land inside the padded row: [lo, hi) in padded coordinates.
        let lo = min(paddedCols, g.padLeft)
        let hi = max(lo, min(paddedCols, g.padLeft + g.inWidth))
        let line = scratch + rows * rowStride
        for r in 0..<rows {
            let ih = r - g.padTop
            let dstRow = scratch + r * rowStride
            if ih < 0 || ih >= g.inHeight {
                fillFloats(dstRow, padValue, rowStride)
                continue
            }
            let src = input + ih * g.inWidth + (lo - g.padLeft)
            if s == 1 {
                fillFloats(dstRow, padValue, lo)
                copyFloats(dstRow + lo, src, hi - lo)
                fillFloats(dstRow + hi, padValue, pw - hi)
            } else if s == 2 {
                // The padded row, contiguous, then even/odd columns into the two phases.
                fillFloats(line, padValue, lo)
                copyFloats(line + lo, src, hi - lo)
                fillFloats(line + hi, padValue, 2 * pw + 32 - hi)
                let even = dstRow, odd = dstRow + pw
                var j = 0
                while j < pw {
                    let v = UnsafeRawPointer(line + 2 * j).loadUnaligned(as: SIMD32<Float>.self)
                    UnsafeMutableRawPointer(even + j).storeBytes(of: v.evenHalf, as: SIMD16<Float>.self)
                    UnsafeMutableRawPointer(odd + j).storeBytes(of: v.oddHalf, as: SIMD16<Float>.self)
                    j += 16
                }
            } else {
                fillFloats(dstRow, padValue, rowStride)
                for phase in 0..<s {
                    let d = dstRow + phase * pw
                    var idx = (lo - phase + s - 1) / s   // first idx with idx·s + phase ≥ lo
                    var c = idx * s + phase
                    while c < hi {
                        d[idx] = input[ih * g.inWidth + c - g.padLeft]
                        idx += 1
                        c += s
                    }
                }
            }
        }
    }

    @inline(__always)
    static func fillFloats(_ dst: UnsafeMutablePointer<Float>, _ value: Float, _ count: Int) {
        var i = 0
        let v = SIMD16<Float>(repeating: value)
        while i + 16 <= count {
            UnsafeMutableRawPointer(dst + i).storeBytes(of: v, as: SIMD16<Float>.self)
            i += 16
        }
        while i < count {
            dst[i] = value
            i += 1
        }
    }

    @inline(__always)
    static func copyFloats(_ dst: UnsafeMutablePointer<Float>, _ src: UnsafePointer<Float>, _ count: Int) {
        var i = 0
        while i + 16 <= count {
            UnsafeMutableRawPointer(dst + i).storeBytes(of: UnsafeRawPointer(src + i).loadUnaligned(as: SIMD16<Float>.self),
                                                        as: SIMD16<Float>.self)
            i += 16
        }
        while i < count {
            dst[i] = src[i]
            i += 1
        }
    }
}
