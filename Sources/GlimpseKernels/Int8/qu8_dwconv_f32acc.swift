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

    public init(geometry g: ConvGeometry, inputZeroPoint: UInt8) {
        geometry = g
        self.inputZeroPoint = inputZeroPoint
        rows = max((g.outHeight - 1) * g.strideH + (g.kernelHeight - 1) * g.dilationH + 1, g.padTop + g.inHeight)
        let width = max((g.outWidth - 1) * g.strideW + (g.kernelWidth - 1) * g.dilationW + 1, g.padLeft + g.inWidth)
        phaseWidth = (width + g.strideW - 1) / g.strideW + 16
    }

    /// Whether the kernel handles a window of this size.
    public static func supports(_ g: ConvGeometry) -> Bool { g.kernelHeight * g.kernelWidth <= maxTaps }

    /// Scratch floats per thread.
    public var scratchFloats: Int { geometry.strideW * rows * phaseWidth + 16 }

    /// One channel: `x` its `[H][W]` plane, `w` its taps as floats, `y` its `[OH][OW]` output plane.
    public func runChannel(_ channel: Int, x: UnsafePointer<UInt8>, w: UnsafePointer<Float>, y: UnsafeMutablePointer<UInt8>,
                           requant rq: RequantPointers, scratch: UnsafeMutablePointer<Float>) {
        let g = geometry
        let s = g.strideW
        let planeSize = rows * phaseWidth
        scratch.initialize(repeating: 0, count: s * planeSize)
        let zx = Float(inputZeroPoint)
        for iy in 0..<g.inHeight {
            let src = x + iy * g.inWidth
            let row = iy + g.padTop
            if s == 1 {
                let dst = scratch + row * phaseWidth + g.padLeft
                var ix = 0
                while ix + 16 <= g.inWidth {
                    let v = UnsafeRawPointer(src + ix).loadUnaligned(as: SIMD16<UInt8>.self)
                    UnsafeMutableRawPointer(dst + ix).storeBytes(of: SIMD16<Float>(SIMD16<Int32>(truncatingIfNeeded: v)) - zx,
                                                                 as: SIMD16<Float>.self)
                    ix += 16
                }
                while ix < g.inWidth { dst[ix] = Float(src[ix]) - zx; ix += 1 }
            } else {
                for ix in 0..<g.inWidth {
                    let col = ix + g.padLeft
                    scratch[(col % s) * planeSize + row * phaseWidth + col / s] = Float(src[ix]) - zx
                }
            }
        }
        let taps = g.kernelHeight * g.kernelWidth
        for oy in 0..<g.outHeight {
            let dst = y + oy * g.outWidth
            var ox = 0
            while ox < g.outWidth {
                var acc0 = SIMD16<Float>(), acc1 = SIMD16<Float>()
                for t in 0..<taps {
                    let ky = t / g.kernelWidth, kx = t - ky * g.kernelWidth
                    let col = kx * g.dilationW
                    let src = scratch + (col % s) * planeSize + (oy * g.strideH + ky * g.dilationH) * phaseWidth + col / s + ox
                    let v = UnsafeRawPointer(src).loadUnaligned(as: SIMD16<Float>.self)
                    if t & 1 == 0 { acc0.addProduct(v, SIMD16<Float>(repeating: w[t])) } else { acc1.addProduct(v, SIMD16<Float>(repeating: w[t])) }
                }
                let acc = SIMD16<Int32>(acc0 + acc1, rounding: .towardZero)
                RequantPointers.store(rq.store16(acc, channel: channel), to: dst + ox, count: g.outWidth - ox)
                ox += 16
            }
        }
    }
}
