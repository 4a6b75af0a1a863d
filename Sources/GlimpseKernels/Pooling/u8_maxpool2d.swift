#if GLIMPSE_VNNI || GLIMPSE_AVX2
import CGlimpseSIMD
#endif

/// 2-D max pooling of uint8 NCHW channel planes (quantized activations), one output row at a time,
/// as `f32_pool2d_rows` does for floats: the window's input rows are first reduced into one row
/// (64 or 16 bytes at a time) that carries the left and right padding, then each block of 32
/// output columns takes the window's taps from that row.
///
/// Padding is 0, the smallest uint8, so a padded cell never wins a maximum: padded cells are
/// ignored, as ONNX MaxPool specifies (the float kernel pads with −∞ for the same reason).
public struct u8_maxpool2d_rows {
    let g: ConvGeometry
    /// The reduced row; index j holds input column j − padLeft.
    let row: UnsafeMutablePointer<UInt8>

    /// Bytes of scratch one `u8_maxpool2d_rows` needs: every column a window reaches, and room for
    /// whole-vector reads past the last window (64 bytes and the window's width at stride 2).
    public static func scratchBytes(_ g: ConvGeometry) -> Int {
        let span = max((g.outWidth - 1) * g.strideW + (g.kernelWidth - 1) * g.dilationW + 1, g.padLeft + g.inWidth)
        return (span + (g.kernelWidth - 1) * g.dilationW + 128 + 63) / 64 * 64
    }

    public init(geometry g: ConvGeometry, scratch: UnsafeMutablePointer<UInt8>) {
        self.g = g
        row = scratch
        // The padding columns are never rewritten by `run`, which only fills the input's columns.
        row.initialize(repeating: 0, count: u8_maxpool2d_rows.scratchBytes(g))
    }

    /// Pools the plane at `input` into `output`.
    public func run(input: UnsafePointer<UInt8>, output: UnsafeMutablePointer<UInt8>) {
        let width = g.inWidth
        let inner = row + g.padLeft
        for oh in 0..<g.outHeight {
            // The window's rows that lie inside the plane.
            let top = oh * g.strideH - g.padTop
            var lo = 0, hi = g.kernelHeight
            while lo < hi && top + lo * g.dilationH < 0 { lo += 1 }
            while hi > lo && top + (hi - 1) * g.dilationH >= g.inHeight { hi -= 1 }
            if lo == hi {
                inner.update(repeating: 0, count: width)
            } else {
                reduceRows(input + (top + lo * g.dilationH) * width, rows: hi - lo, into: inner)
            }
            let out = output + oh * g.outWidth
            if g.strideW > 2 {
                for ow in 0..<g.outWidth {
                    let first = row + ow * g.strideW
                    var v = first[0]
                    for t in 1..<max(1, g.kernelWidth) { v = max(v, first[t * g.dilationW]) }
                    out[ow] = v
                }
                continue
            }
            var ow = 0
            while ow < g.outWidth {
                store(g.strideW == 1 ? windowStride1(ow) : windowStride2(ow), row: oh, column: ow, to: out)
                ow += 32
            }
        }
    }

    /// The maximum over `rows` input rows from `first` (`dilationH` rows apart) of each column,
    /// into `inner`. Whole vectors; a last vector that would pass the row's end is taken ending at
    /// it instead (overlapping the one before, which gives the same values).
    @inline(__always)
    private func reduceRows(_ first: UnsafePointer<UInt8>, rows: Int, into inner: UnsafeMutablePointer<UInt8>) {
        let width = g.inWidth, step = g.dilationH * width
        @inline(__always) func column64(_ iw: Int) {
            var p = UnsafeRawPointer(first + iw)
            var v = p.loadUnaligned(as: SIMD64<UInt8>.self)
            for _ in 1..<max(1, rows) {
                p += step
                v = u8Max(v, p.loadUnaligned(as: SIMD64<UInt8>.self))
            }
            UnsafeMutableRawPointer(inner + iw).storeBytes(of: v, as: SIMD64<UInt8>.self)
        }
        @inline(__always) func column16(_ iw: Int) {
            var p = UnsafeRawPointer(first + iw)
            var v = p.loadUnaligned(as: SIMD16<UInt8>.self)
            for _ in 1..<max(1, rows) {
                p += step
                v = u8Max(v, p.loadUnaligned(as: SIMD16<UInt8>.self))
            }
            UnsafeMutableRawPointer(inner + iw).storeBytes(of: v, as: SIMD16<UInt8>.self)
        }
        if width >= 64 {
            var iw = 0
            while iw + 64 <= width {
                column64(iw)
                iw += 64
            }
            if iw < width { column64(width - 64) }
        } else if width >= 16 {
            var iw = 0
            while iw + 16 <= width {
                column16(iw)
                iw += 16
            }
            if iw < width { column16(width - 16) }
        } else {
            for iw in 0..<width {
                var v = first[iw]
                for r in 1..<max(1, rows) { v = max(v, first[iw + r * step]) }
                inner[iw] = v
            }
        }
    }

    /// Output columns `ow..<ow+32` at stride 1: one load per tap.
    @inline(__always)
    private func windowStride1(_ ow: Int) -> SIMD32<UInt8> {
        let base = UnsafeRawPointer(row + ow)
        var acc = base.loadUnaligned(as: SIMD32<UInt8>.self)
        for t in 1..<max(1, g.kernelWidth) {
            acc = u8Max(acc, base.loadUnaligned(fromByteOffset: t * g.dilationW, as: SIMD32<UInt8>.self))
        }
        return acc
    }

    /// Output columns `ow..<ow+32` at stride 2: 64 bytes read as 32 16-bit lanes hold an even
    /// column in their low byte and the odd one after it in their high byte, so a tap at an even
    /// offset is the low bytes of the lanes loaded there, and one at an odd offset the high bytes of
    /// the lanes loaded a byte before it.
    @inline(__always)
    private func windowStride2(_ ow: Int) -> SIMD32<UInt8> {
        let base = UnsafeRawPointer(row + 2 * ow)
#if GLIMPSE_VNNI
        var wide = SIMD8<Int64>()
        for t in 0..<g.kernelWidth {
            let d = t * g.dilationW
            wide = glimpse_max_u16_byte_512(wide, base.loadUnaligned(fromByteOffset: d & ~1, as: SIMD8<Int64>.self), Int32(d & 1))
        }
        return unsafeBitCast(glimpse_narrow_u16_u8_512(wide), to: SIMD32<UInt8>.self)
#elseif GLIMPSE_AVX2
        var lo = SIMD4<Int64>(), hi = SIMD4<Int64>()
        for t in 0..<g.kernelWidth {
            let d = t * g.dilationW
            let v = base.loadUnaligned(fromByteOffset: d & ~1, as: SIMD32<UInt16>.self)
            let lane = d & 1 == 0 ? v & 0xFF : v &>> 8
            lo = glimpse_max_u16_avx2_256(lo, unsafeBitCast(lane.lowHalf, to: SIMD4<Int64>.self))
            hi = glimpse_max_u16_avx2_256(hi, unsafeBitCast(lane.highHalf, to: SIMD4<Int64>.self))
        }
        let acc = SIMD32<UInt16>(lowHalf: unsafeBitCast(lo, to: SIMD16<UInt16>.self), highHalf: unsafeBitCast(hi, to: SIMD16<UInt16>.self))
        return SIMD32<UInt8>(truncatingIfNeeded: acc)
#else
        var acc = SIMD32<UInt16>()
        for t in 0..<g.kernelWidth {
            let d = t * g.dilationW
            let v = base.loadUnaligned(fromByteOffset: d & ~1, as: SIMD32<UInt16>.self)
            let lane = d & 1 == 0 ? v & 0xFF : v &>> 8
            acc = acc.replacing(with: lane, where: acc .< lane)
        }
        return SIMD32<UInt8>(truncatingIfNeeded: acc)
#endif
    }

    /// Stores output columns `ow..<ow+32` of output row `oh` (`out` is that row): a whole vector
    /// where it ends inside this plane's output (an overrun into the next rows is rewritten by
    /// them), lane by lane at the plane's end.
    @inline(__always)
    private func store(_ v: SIMD32<UInt8>, row oh: Int, column ow: Int, to out: UnsafeMutablePointer<UInt8>) {
        if (g.outHeight &- oh) &* g.outWidth &- ow >= 32 {
            UnsafeMutableRawPointer(out + ow).storeBytes(of: v, as: SIMD32<UInt8>.self)
        } else {
            for t in 0..<(g.outWidth &- ow) { out[ow &+ t] = v[t] }
        }
    }
}

/// Lane-wise unsigned byte maxima: `vpmaxub` on AVX-512 and AVX2 targets (the generic comparison and
/// blend on uint8 lanes is not vectorized).
@inline(__always)
func u8Max(_ a: SIMD64<UInt8>, _ b: SIMD64<UInt8>) -> SIMD64<UInt8> {
#if GLIMPSE_VNNI
    return unsafeBitCast(glimpse_max_u8_512(unsafeBitCast(a, to: SIMD8<Int64>.self), unsafeBitCast(b, to: SIMD8<Int64>.self)),
                         to: SIMD64<UInt8>.self)
#elseif GLIMPSE_AVX2
    return SIMD64<UInt8>(lowHalf: u8Max(a.lowHalf, b.lowHalf), highHalf: u8Max(a.highHalf, b.highHalf))
#else
    return a.replacing(with: b, where: a .< b)
#endif
}

@inline(__always)
func u8Max(_ a: SIMD32<UInt8>, _ b: SIMD32<UInt8>) -> SIMD32<UInt8> {
#if GLIMPSE_VNNI
    return unsafeBitCast(glimpse_max_u8_256(unsafeBitCast(a, to: SIMD4<Int64>.self), unsafeBitCast(b, to: SIMD4<Int64>.self)),
                         to: SIMD32<UInt8>.self)
#elseif GLIMPSE_AVX2
    return unsafeBitCast(glimpse_max_u8_avx2_256(unsafeBitCast(a, to: SIMD4<Int64>.self), unsafeBitCast(b, to: SIMD4<Int64>.self)),
                         to: SIMD32<UInt8>.self)
#else
    return a.replacing(with: b, where: a .< b)
#endif
}

@inline(__always)
func u8Max(_ a: SIMD16<UInt8>, _ b: SIMD16<UInt8>) -> SIMD16<UInt8> {
#if GLIMPSE_VNNI
    return unsafeBitCast(glimpse_max_u8_128(unsafeBitCast(a, to: SIMD2<Int64>.self), unsafeBitCast(b, to: SIMD2<Int64>.self)),
                         to: SIMD16<UInt8>.self)
#elseif GLIMPSE_AVX2
    return unsafeBitCast(glimpse_max_u8_avx2_128(unsafeBitCast(a, to: SIMD2<Int64>.self), unsafeBitCast(b, to: SIMD2<Int64>.self)),
                         to: SIMD16<UInt8>.self)
#else
    return a.replacing(with: b, where: a .< b)
#endif
}

/// Scalar reference uint8 max pooling over one plane: the maximum of the window's cells inside the
/// plane (0 for a window with none).
public func u8_maxpool2d_reference(input: UnsafePointer<UInt8>, output: UnsafeMutablePointer<UInt8>, geometry g: ConvGeometry) {
    for oh in 0..<g.outHeight {
        for ow in 0..<g.outWidth {
            var best: UInt8 = 0
            for kh in 0..<g.kernelHeight {
                for kw in 0..<g.kernelWidth {
                    let ih = oh * g.strideH - g.padTop + kh * g.dilationH
                    let iw = ow * g.strideW - g.padLeft + kw * g.dilationW
                    guard ih >= 0, ih < g.inHeight, iw >= 0, iw < g.inWidth else { continue }
                    best = max(best, input[ih * g.inWidth + iw])
                }
            }
            output[oh * g.outWidth + ow] = best
        }
    }
}
