#if GLIMPSE_VNNI
import CGlimpseSIMD
#endif

/// Depthwise int8 convolution (u8 input and output, s8 weights, any window, stride 1 or 2 along
/// rows, any padding), one channel plane at a time: the plane is widened to floats holding
/// `x − zx` in a zero-padded copy, taps are multiply-added in float (at stride 2 each tap takes the
/// even lanes of two loads), and the sums are requantized in the store.
///
/// The float sums are exact integers: each product is at most 255·128 in magnitude, and with at
/// most `maxTaps` taps every partial sum stays below 2^24. So the result equals the integer
/// reference bit for bit.
public struct QU8Depthwise: Sendable {
    public static let maxTaps = 256
    public let geometry: ConvGeometry
    public let inputZeroPoint: UInt8
    /// Padded plane: rows and row length in floats.
    let rows: Int
    let planeWidth: Int
    /// Each tap's offset in the padded plane from the first tap of an output pixel.
    let tapOffsets: [Int]

    public init(geometry g: ConvGeometry, inputZeroPoint: UInt8) {
        geometry = g
        self.inputZeroPoint = inputZeroPoint
        rows = max((g.outHeight - 1) * g.strideH + (g.kernelHeight - 1) * g.dilationH + 1, g.padTop + g.inHeight)
        let width = max((g.outWidth - 1) * g.strideW + (g.kernelWidth - 1) * g.dilationW + 1, g.padLeft + g.inWidth)
        // Slack for whole-vector loads past the last output: 16 lanes at the stride, plus 16.
        planeWidth = width + 16 * g.strideW + 16
        tapOffsets = (0..<g.kernelHeight * g.kernelWidth).map { [planeWidth] t in
            let ky = t / g.kernelWidth, kx = t - ky * g.kernelWidth
            return ky * g.dilationH * planeWidth + kx * g.dilationW
        }
    }

    /// Whether the kernel handles this window.
    public static func supports(_ g: ConvGeometry) -> Bool {
        g.kernelHeight * g.kernelWidth <= maxTaps && (g.strideW == 1 || g.strideW == 2)
    }

    /// Scratch floats per thread.
    public var scratchFloats: Int { rows * planeWidth + 16 }

    /// Sixteen output lanes of one tap: 16 consecutive floats, or at stride 2 the even ones of 32.
    @inline(__always)
    static func lanes(_ p: UnsafeMutablePointer<Float>, stride2: Bool) -> SIMD16<Float> {
        let a = UnsafeRawPointer(p).loadUnaligned(as: SIMD16<Float>.self)
        guard stride2 else { return a }
        let b = UnsafeRawPointer(p + 16).loadUnaligned(as: SIMD16<Float>.self)
        return evenLanes(a, b)
    }

    /// One channel: `x` its `[H][W]` plane, `w` its taps as floats, `y` its `[OH][OW]` output plane.
    public func runChannel(_ channel: Int, x: UnsafePointer<UInt8>, w: UnsafePointer<Float>, y: UnsafeMutablePointer<UInt8>,
                           requant rq: RequantPointers, scratch: UnsafeMutablePointer<Float>) {
        runChannels(channel..<channel + 1, x: x - channel * geometry.inPixels, w: w - channel * geometry.kernelHeight * geometry.kernelWidth,
                    y: y - channel * geometry.outPixels, requant: rq, scratch: scratch)
    }

    /// Channels `channels` of one image: `x` is `[C][H][W]`, `w` `[C][taps]`, `y` `[C][OH][OW]`. The
    /// padding of the scratch plane is zeroed once for all of them.
    public func runChannels(_ channels: Range<Int>, x: UnsafePointer<UInt8>, w: UnsafePointer<Float>, y: UnsafeMutablePointer<UInt8>,
                            requant rq: RequantPointers, scratch: UnsafeMutablePointer<Float>) {
        let g = geometry
        let taps = g.kernelHeight * g.kernelWidth
        zeroPadding(scratch)
        for c in channels {
            fill(x + c * g.inPixels, scratch)
            if g.strideW == 2 {
                compute(c, w: w + c * taps, y: y + c * g.outPixels, requant: rq, scratch: scratch, stride2: true)
            } else {
                compute(c, w: w + c * taps, y: y + c * g.outPixels, requant: rq, scratch: scratch, stride2: false)
            }
        }
    }

    @inline(__always)
    func compute(_ channel: Int, w: UnsafePointer<Float>, y: UnsafeMutablePointer<UInt8>, requant rq: RequantPointers,
                 scratch: UnsafeMutablePointer<Float>, stride2: Bool) {
        let g = geometry
        let taps = g.kernelHeight * g.kernelWidth
        let step = stride2 ? 32 : 16
        tapOffsets.withUnsafeBufferPointer { offsets in
            if taps == 9 {
                let o0 = offsets[0], o1 = offsets[1], o2 = offsets[2], o3 = offsets[3], o4 = offsets[4]
                let o5 = offsets[5], o6 = offsets[6], o7 = offsets[7], o8 = offsets[8]
                let w0 = SIMD16<Float>(repeating: w[0]), w1 = SIMD16<Float>(repeating: w[1]), w2 = SIMD16<Float>(repeating: w[2])
                let w3 = SIMD16<Float>(repeating: w[3]), w4 = SIMD16<Float>(repeating: w[4]), w5 = SIMD16<Float>(repeating: w[5])
                let w6 = SIMD16<Float>(repeating: w[6]), w7 = SIMD16<Float>(repeating: w[7]), w8 = SIMD16<Float>(repeating: w[8])
                for oy in 0..<g.outHeight {
                    let dst = y + oy * g.outWidth
                    var src = scratch + oy * g.strideH * planeWidth
                    var ox = 0
                    while ox < g.outWidth {
                        var a = Self.lanes(src + o0, stride2: stride2) * w0
                        var b = Self.lanes(src + o1, stride2: stride2) * w1
                        a.addProduct(Self.lanes(src + o2, stride2: stride2), w2); b.addProduct(Self.lanes(src + o3, stride2: stride2), w3)
                        a.addProduct(Self.lanes(src + o4, stride2: stride2), w4); b.addProduct(Self.lanes(src + o5, stride2: stride2), w5)
                        a.addProduct(Self.lanes(src + o6, stride2: stride2), w6); b.addProduct(Self.lanes(src + o7, stride2: stride2), w7)
                        a.addProduct(Self.lanes(src + o8, stride2: stride2), w8)
                        let acc = simdRoundToInt32(a + b)   // exact integers
                        RequantPointers.store(rq.store16(acc, channel: channel), to: dst + ox, count: g.outWidth - ox)
                        ox += 16
                        src += step
                    }
                }
                return
            }
            for oy in 0..<g.outHeight {
                let dst = y + oy * g.outWidth
                var base = scratch + oy * g.strideH * planeWidth
                var ox = 0
                while ox < g.outWidth {
                    var acc0 = SIMD16<Float>(), acc1 = SIMD16<Float>()
                    var t = 0
                    while t + 1 < taps {
                        acc0.addProduct(Self.lanes(base + offsets[t], stride2: stride2), SIMD16<Float>(repeating: w[t]))
                        acc1.addProduct(Self.lanes(base + offsets[t + 1], stride2: stride2), SIMD16<Float>(repeating: w[t + 1]))
                        t += 2
                    }
                    if t < taps { acc0.addProduct(Self.lanes(base + offsets[t], stride2: stride2), SIMD16<Float>(repeating: w[t])) }
                    let acc = simdRoundToInt32(acc0 + acc1)   // exact integers
                    RequantPointers.store(rq.store16(acc, channel: channel), to: dst + ox, count: g.outWidth - ox)
                    ox += 16
                    base += step
                }
            }
        }
    }

    /// Zeroes a short run of floats with vector stores (a call to memset costs more at these sizes).
    @inline(__always)
    func zero(_ p: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        while i + 16 <= count {
            UnsafeMutableRawPointer(p + i).storeBytes(of: SIMD16<Float>(), as: SIMD16<Float>.self)
            i += 16
        }
        while i < count { p[i] = 0; i += 1 }
    }

    /// Zeroes the padding of the scratch plane: the rows above and below the input and the columns
    /// left and right of it. `fill` writes only the input's part, so this holds for every channel.
    func zeroPadding(_ scratch: UnsafeMutablePointer<Float>) {
        let g = geometry
        scratch.initialize(repeating: 0, count: g.padTop * planeWidth)
        let below = g.padTop + g.inHeight
        (scratch + below * planeWidth).initialize(repeating: 0, count: (rows - below) * planeWidth)
        let end = g.padLeft + g.inWidth
        for iy in 0..<g.inHeight {
            let row = scratch + (iy + g.padTop) * planeWidth
            zero(row, count: g.padLeft)
            zero(row + end, count: planeWidth - end)
        }
    }

    /// The centered copy of one input plane into the padded scratch plane.
    @inline(__always)
    func fill(_ x: UnsafePointer<UInt8>, _ scratch: UnsafeMutablePointer<Float>) {
        let g = geometry
        let zx = SIMD16<Float>(repeating: Float(inputZeroPoint)), zs = Float(inputZeroPoint)
        for iy in 0..<g.inHeight {
            let src = x + iy * g.inWidth
            let row = scratch + (iy + g.padTop) * planeWidth
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
        }
    }
}

/// Lanes 0, 2, ..., 30 of the 32 floats a, b.
@inline(__always)
func evenLanes(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float> {
#if GLIMPSE_VNNI
    return glimpse_deinterleave_f32_512(a, b, 0)
#else
    return SIMD16<Float>(a[0], a[2], a[4], a[6], a[8], a[10], a[12], a[14], b[0], b[2], b[4], b[6], b[8], b[10], b[12], b[14])
#endif
}
