#if GLIMPSE_VNNI
import CGlimpseSIMD
#endif

/// Depthwise int8 convolution (u8 input and output, s8 weights, any window, stride and padding),
/// one channel plane at a time: the plane is widened to floats holding `x − zx` in a padded copy
/// (zero padding, split into `strideW` column phases so every tap reads 16 consecutive floats),
/// taps are multiply-added in float, and the sums are requantized in the store.
///
/// The float sums are exact integers: each product is at most 255·128 in magnitude, and with at
/// most `maxTaps` taps every partial sum stays below 2^24. So the result equals the integer
/// reference bit for bit.
public struct QU8Depthwise: Sendable {
    public static let maxTaps = 256
    public let geometry: ConvGeometry
    public let inputZeroPoint: UInt8
    /// Padded plane: rows and columns of each phase.
    let rows: Int
    let phaseWidth: Int
    /// Each tap's offset in the padded planes from the first tap of an output row.
    let tapOffsets: [Int]

    public init(geometry g: ConvGeometry, inputZeroPoint: UInt8) {
        geometry = g
        self.inputZeroPoint = inputZeroPoint
        rows = max((g.outHeight - 1) * g.strideH + (g.kernelHeight - 1) * g.dilationH + 1, g.padTop + g.inHeight)
        let width = max((g.outWidth - 1) * g.strideW + (g.kernelWidth - 1) * g.dilationW + 1, g.padLeft + g.inWidth)
        phaseWidth = (width + g.strideW - 1) / g.strideW + 16
        let planeSize = rows * phaseWidth
        tapOffsets = (0..<g.kernelHeight * g.kernelWidth).map { [phaseWidth] t in
            let ky = t / g.kernelWidth, col = (t - ky * g.kernelWidth) * g.dilationW
            return (col % g.strideW) * planeSize + ky * g.dilationH * phaseWidth + col / g.strideW
        }
    }

    /// Whether the kernel handles a window of this size.
    public static func supports(_ g: ConvGeometry) -> Bool { g.kernelHeight * g.kernelWidth <= maxTaps }

    /// Scratch floats per thread.
    public var scratchFloats: Int { geometry.strideW * rows * phaseWidth + 16 }

    /// One channel: `x` its `[H][W]` plane, `w` its taps as floats, `y` its `[OH][OW]` output plane.
    public func runChannel(_ channel: Int, x: UnsafePointer<UInt8>, w: UnsafePointer<Float>, y: UnsafeMutablePointer<UInt8>,
                           requant rq: RequantPointers, scratch: UnsafeMutablePointer<Float>) {
        fill(x, scratch)
        let g = geometry
        let taps = g.kernelHeight * g.kernelWidth
        tapOffsets.withUnsafeBufferPointer { offsets in
            if taps == 9 {
                let o0 = offsets[0], o1 = offsets[1], o2 = offsets[2], o3 = offsets[3], o4 = offsets[4]
                let o5 = offsets[5], o6 = offsets[6], o7 = offsets[7], o8 = offsets[8]
                let w0 = SIMD16<Float>(repeating: w[0]), w1 = SIMD16<Float>(repeating: w[1]), w2 = SIMD16<Float>(repeating: w[2])
                let w3 = SIMD16<Float>(repeating: w[3]), w4 = SIMD16<Float>(repeating: w[4]), w5 = SIMD16<Float>(repeating: w[5])
                let w6 = SIMD16<Float>(repeating: w[6]), w7 = SIMD16<Float>(repeating: w[7]), w8 = SIMD16<Float>(repeating: w[8])
                @inline(__always) func at(_ p: UnsafeMutablePointer<Float>, _ o: Int) -> SIMD16<Float> {
                    UnsafeRawPointer(p + o).loadUnaligned(as: SIMD16<Float>.self)
                }
                for oy in 0..<g.outHeight {
                    let dst = y + oy * g.outWidth
                    var src = scratch + oy * g.strideH * phaseWidth
                    var ox = 0
                    while ox < g.outWidth {
                        var a = at(src, o0) * w0
                        var b = at(src, o1) * w1
                        a.addProduct(at(src, o2), w2); b.addProduct(at(src, o3), w3)
                        a.addProduct(at(src, o4), w4); b.addProduct(at(src, o5), w5)
                        a.addProduct(at(src, o6), w6); b.addProduct(at(src, o7), w7)
                        a.addProduct(at(src, o8), w8)
                        let acc = simdRoundToInt32(a + b)   // exact integers
                        RequantPointers.store(rq.store16(acc, channel: channel), to: dst + ox, count: g.outWidth - ox)
                        ox += 16
                        src += 16
                    }
                }
                return
            }
            for oy in 0..<g.outHeight {
                let dst = y + oy * g.outWidth
                let base = scratch + oy * g.strideH * phaseWidth
                var ox = 0
                while ox < g.outWidth {
                    var acc0 = SIMD16<Float>(), acc1 = SIMD16<Float>()
                    var t = 0
                    while t + 1 < taps {
                        acc0.addProduct(UnsafeRawPointer(base + offsets[t] + ox).loadUnaligned(as: SIMD16<Float>.self), SIMD16<Float>(repeating: w[t]))
                        acc1.addProduct(UnsafeRawPointer(base + offsets[t + 1] + ox).loadUnaligned(as: SIMD16<Float>.self),
                                        SIMD16<Float>(repeating: w[t + 1]))
                        t += 2
                    }
                    if t < taps {
                        acc0.addProduct(UnsafeRawPointer(base + offsets[t] + ox).loadUnaligned(as: SIMD16<Float>.self), SIMD16<Float>(repeating: w[t]))
                    }
                    let acc = simdRoundToInt32(acc0 + acc1)   // exact integers
                    RequantPointers.store(rq.store16(acc, channel: channel), to: dst + ox, count: g.outWidth - ox)
                    ox += 16
                }
            }
        }
    }

    /// The padded, centered, phase-split copy of one input plane.
    @inline(__always)
    func fill(_ x: UnsafePointer<UInt8>, _ scratch: UnsafeMutablePointer<Float>) {
        let g = geometry
        let s = g.strideW
        let planeSize = rows * phaseWidth
        // Zero what the input does not cover: whole rows above and below, and per row and phase the
        // columns left and right of the input's.
        for p in 0..<s {
            let phase = scratch + p * planeSize
            phase.initialize(repeating: 0, count: g.padTop * phaseWidth)
            let below = g.padTop + g.inHeight
            (phase + below * phaseWidth).initialize(repeating: 0, count: (rows - below) * phaseWidth)
            // Phase p holds padded columns p, p + s, ...: input columns from index ⌈(padLeft − p)/s⌉
            // to ⌈(padLeft + W − p)/s⌉.
            let first = max(0, (g.padLeft - p + s - 1) / s), end = max(0, (g.padLeft + g.inWidth - p + s - 1) / s)
            for r in g.padTop..<below {
                let row = phase + r * phaseWidth
                row.initialize(repeating: 0, count: first)
                (row + end).initialize(repeating: 0, count: phaseWidth - end)
            }
        }
        let zx = SIMD16<Float>(repeating: Float(inputZeroPoint)), zs = Float(inputZeroPoint)
        for iy in 0..<g.inHeight {
            let src = x + iy * g.inWidth
            let row = scratch + (iy + g.padTop) * phaseWidth
            if s == 1 {
                let dst = row + g.padLeft
                var ix = 0
                while ix + 16 <= g.inWidth {
                    UnsafeMutableRawPointer(dst + ix).storeBytes(of: simdFloat(simdLoadU8(src + ix)) - zx, as: SIMD16<Float>.self)
                    ix += 16
                }
#if GLIMPSE_VNNI
                if ix < g.inWidth {
                    let rest = Int32(g.inWidth - ix)
                    let v = simdFloat(unsafeBitCast(glimpse_load_u8_i32_first(src + ix, rest), to: SIMD16<Int32>.self)) - zx
                    glimpse_store_f32_first(dst + ix, v, rest)
                    ix = g.inWidth
                }
#endif
                while ix < g.inWidth { dst[ix] = Float(src[ix]) - zs; ix += 1 }
                continue
            }
            // Column c of the padded row goes to phase c % s at index c / s.
            var ix = 0
#if GLIMPSE_VNNI
            if s == 2 {
                // Input column ix is padded column ix + padLeft: phase (ix + padLeft) & 1, index (ix + padLeft) >> 1.
                // A chunk of 32 from an even ix puts its even and odd lanes at one base index, or
                // (odd padLeft) the even lanes in phase 1 there and the odd ones in phase 0 one further.
                let odd = g.padLeft & 1 == 1
                let p0 = row, p1 = row + planeSize
                while ix < g.inWidth {
                    // Up to 32 columns: masked loads and stores past the row's end.
                    let rest = min(32, g.inWidth - ix)
                    let na = Int32(min(16, rest)), nb = Int32(max(0, rest - 16))
                    let a = simdFloat(unsafeBitCast(glimpse_load_u8_i32_first(src + ix, na), to: SIMD16<Int32>.self)) - zx
                    let b = simdFloat(unsafeBitCast(glimpse_load_u8_i32_first(src + ix + 16, nb), to: SIMD16<Int32>.self)) - zx
                    let base = (ix + g.padLeft) >> 1
                    let evenLanes = deinterleave(a, b, odd: false), oddLanes = deinterleave(a, b, odd: true)
                    let ne = Int32((rest + 1) / 2), no = Int32(rest / 2)
                    if odd {
                        glimpse_store_f32_first(p1 + base, evenLanes, ne)
                        glimpse_store_f32_first(p0 + base + 1, oddLanes, no)
                    } else {
                        glimpse_store_f32_first(p0 + base, evenLanes, ne)
                        glimpse_store_f32_first(p1 + base, oddLanes, no)
                    }
                    ix += rest
                }
            }
#endif
            var col = ix + g.padLeft
            var phase = col % s, index = col / s
            while ix < g.inWidth {
                row[phase * planeSize + index] = Float(src[ix]) - zs
                ix += 1
                col += 1
                phase += 1
                if phase == s { phase = 0; index += 1 }
            }
            _ = col
        }
    }
}

#if GLIMPSE_VNNI
@inline(__always)
func deinterleave(_ a: SIMD16<Float>, _ b: SIMD16<Float>, odd: Bool) -> SIMD16<Float> {
    glimpse_deinterleave_f32_512(a, b, odd ? 1 : 0)
}
#endif
