/// Two-pass (horizontal, then vertical) fixed-point resampling of RGBX pixels, bit-exact with
/// Pillow's 8-bit `ImagingResample` (intermediate rounded to 8 bits, as Pillow does), computing
/// only the output window that survives the crop. Rows are handed to `sink` as they are finished,
/// so the full resized image never exists.
enum Resample {
    /// Resizes `source` per `geometry` and calls `sink(row, outputY)` for each valid output row with
    /// `geometry.validX.count` RGBX pixels.
    static func run(_ source: PixelBuffer, geometry g: CropGeometry,
                    sink: (UnsafePointer<UInt8>, Int) -> Void) throws {
        let validX = g.validX, validY = g.validY
        guard !validX.isEmpty, !validY.isEmpty else { return }
        let xs = (validX.lowerBound + g.offsetX)..<(validX.upperBound + g.offsetX)   // resized columns
        let ys = (validY.lowerBound + g.offsetY)..<(validY.upperBound + g.offsetY)   // resized rows
        let needH = source.width != g.resizedWidth
        let needV = source.height != g.resizedHeight
        let vAxis = needV ? ResampleAxis(inSize: source.height, outSize: g.resizedHeight, outputs: ys) : nil
        let rows = vAxis?.inputRange ?? ys
        let n = xs.count

        // Horizontal pass (or a view of the source when the width is unchanged).
        let temp: PixelBuffer?
        let tempBase: UnsafePointer<UInt8>
        let tempStride: Int
        if needH {
            let hAxis = ResampleAxis(inSize: source.width, outSize: g.resizedWidth, outputs: xs)
            let t = try PixelBuffer(width: n, height: rows.count)
            horizontal(source, rows: rows, axis: hAxis, into: t)
            temp = t
            tempBase = UnsafePointer(t.base)
            tempStride = t.rowBytes
        } else {
            temp = nil
            tempBase = UnsafePointer(source.base + rows.lowerBound * source.rowBytes + xs.lowerBound * 4)
            tempStride = source.rowBytes
        }

        guard let vAxis else {
            for (i, y) in validY.enumerated() { sink(tempBase + i * tempStride, y) }
            withExtendedLifetime(temp) {}
            return
        }
        let rowBytes = n * 4
        let line = UnsafeMutablePointer<UInt8>.allocate(capacity: rowBytes + 64)
        defer { line.deallocate() }
        for (i, y) in validY.enumerated() {
            let first = vAxis.starts[i] - rows.lowerBound
            vAxis.weights.withUnsafeBufferPointer { w in
                guard let weights = w.baseAddress else { return }
                vertical(tempBase + first * tempStride, stride: tempStride, taps: vAxis.taps,
                         weights: weights + i * vAxis.taps, count: rowBytes, into: line)
            }
            sink(UnsafePointer(line), y)
        }
        withExtendedLifetime(temp) {}
    }

    /// Horizontal pass over `rows` of `source` into `out` (one row per source row): one SIMD4
    /// accumulator (R, G, B, X) per output pixel. (Four pixels per SIMD16 accumulator measured no
    /// faster: assembling the four gathered pixels costs what the wider multiply saves.)
    static func horizontal(_ source: PixelBuffer, rows: Range<Int>, axis: ResampleAxis, into out: PixelBuffer) {
        switch axis.taps {
        case 2: horizontal(source, rows: rows, axis: axis, into: out, window: SIMD8<Int32>.self)
        case 3, 4: horizontal(source, rows: rows, axis: axis, into: out, window: SIMD16<Int32>.self)
        default: horizontalLoop(source, rows: rows, axis: axis, into: out)
        }
    }

    /// The horizontal pass for windows of at most four pixels (every upscale, and downscales by up to
    /// about 1.5): the window's pixels are read in one load (2 or 4 RGBX pixels; a 3-tap window reads a
    /// fourth pixel whose weight is 0, inside the row's next pixel or the buffer's 64-byte slack),
    /// widened once, multiplied by its weights repeated per channel, and the per-tap groups of four
    /// summed. Integer sums: bit-exact with the loop over taps.
    private static func horizontal<V: SIMD>(_ source: PixelBuffer, rows: Range<Int>, axis: ResampleAxis, into out: PixelBuffer,
                                            window: V.Type) where V.Scalar == Int32 {
        let taps = axis.taps, lanes = V.scalarCount, n = out.width
        var expanded = [Int32](repeating: 0, count: n * lanes)
        for x in 0..<n {
            for t in 0..<taps {
                for c in 0..<4 { expanded[x * lanes + t * 4 + c] = axis.weights[x * taps + t] }
            }
        }
        let half = SIMD4<Int32>(repeating: Int32(1) << (ResampleAxis.precisionBits - 1))
        expanded.withUnsafeBufferPointer { eb in
            axis.starts.withUnsafeBufferPointer { sb in
                guard let weights = eb.baseAddress, let starts = sb.baseAddress else { return }
                for (r, y) in rows.enumerated() {
                    let src = UnsafeRawPointer(source.base + y * source.rowBytes)
                    let dst = UnsafeMutableRawPointer(out.base + r * out.rowBytes)
                    for x in 0..<n {
                        let acc = windowSum(src + starts[x] * 4, UnsafeRawPointer(weights + x * lanes), as: V.self) &+ half
                        dst.storeBytes(of: clip8(acc), toByteOffset: x * 4, as: SIMD4<UInt8>.self)
                    }
                }
            }
        }
    }

    @inline(__always)
    private static func windowSum<V: SIMD>(_ pixels: UnsafeRawPointer, _ weights: UnsafeRawPointer, as: V.Type) -> SIMD4<Int32>
    where V.Scalar == Int32 {
        if V.self == SIMD8<Int32>.self {
            let px = SIMD8<Int32>(truncatingIfNeeded: pixels.loadUnaligned(as: SIMD8<UInt8>.self))
            let p = px &* weights.loadUnaligned(as: SIMD8<Int32>.self)
            return p.lowHalf &+ p.highHalf
        }
        let px = SIMD16<Int32>(truncatingIfNeeded: pixels.loadUnaligned(as: SIMD16<UInt8>.self))
        let p = px &* weights.loadUnaligned(as: SIMD16<Int32>.self)
        let q = p.lowHalf &+ p.highHalf
        return q.lowHalf &+ q.highHalf
    }

    /// The horizontal pass for any window length, one tap at a time.
    static func horizontalLoop(_ source: PixelBuffer, rows: Range<Int>, axis: ResampleAxis, into out: PixelBuffer) {
        let taps = axis.taps
        let half = Int32(1) << (ResampleAxis.precisionBits - 1)
        axis.weights.withUnsafeBufferPointer { wb in
            axis.starts.withUnsafeBufferPointer { sb in
                guard let weights = wb.baseAddress, let starts = sb.baseAddress else { return }
                for (r, y) in rows.enumerated() {
                    let src = UnsafeRawPointer(source.base + y * source.rowBytes)
                    let dst = UnsafeMutableRawPointer(out.base + r * out.rowBytes)
                    for x in 0..<out.width {
                        var acc = SIMD4<Int32>(repeating: half)
                        let p = src + starts[x] * 4
                        let k = weights + x * taps
                        for t in 0..<taps {
                            let px = p.loadUnaligned(fromByteOffset: t * 4, as: SIMD4<UInt8>.self)
                            acc &+= SIMD4<Int32>(truncatingIfNeeded: px) &* k[t]
                        }
                        dst.storeBytes(of: clip8(acc), toByteOffset: x * 4, as: SIMD4<UInt8>.self)
                    }
                }
            }
        }
    }

    /// Vertical pass: one output row = Σ weights[t] × row(first + t), over `count` bytes.
    @inline(__always)
    static func vertical(_ first: UnsafePointer<UInt8>, stride: Int, taps: Int, weights: UnsafePointer<Int32>,
                         count: Int, into out: UnsafeMutablePointer<UInt8>) {
        let half = Int32(1) << (ResampleAxis.precisionBits - 1)
        var i = 0
        // The buffers carry 64 bytes of slack, so the last block may run past `count`.
        while i < count {
            var acc = SIMD16<Int32>(repeating: half)
            var p = UnsafeRawPointer(first + i)
            for t in 0..<taps {
                let v = p.loadUnaligned(as: SIMD16<UInt8>.self)
                acc &+= SIMD16<Int32>(truncatingIfNeeded: v) &* weights[t]
                p += stride
            }
            UnsafeMutableRawPointer(out + i).storeBytes(of: clip8(acc), as: SIMD16<UInt8>.self)
            i += 16
        }
    }

    /// Pillow's clip8 — (acc >> 22) clamped to 0...255 — without the clamp: the bilinear (triangle)
    /// weights are all ≥ 0 and their 22-bit roundings sum to 2^22 ± taps/2, so for 8-bit inputs
    /// acc >> 22 is always within 0...255 (acc ≥ 2^21 and acc ≤ 255·(2^22 + taps/2) + 2^21 < 256·2^22
    /// for any tap count below ~8000). The scalar reference in the tests clamps and must agree.
    @inline(__always)
    static func clip8(_ acc: SIMD4<Int32>) -> SIMD4<UInt8> {
        SIMD4<UInt8>(truncatingIfNeeded: acc &>> ResampleAxis.precisionBits)
    }

    @inline(__always)
    static func clip8(_ acc: SIMD16<Int32>) -> SIMD16<UInt8> {
        SIMD16<UInt8>(truncatingIfNeeded: acc &>> ResampleAxis.precisionBits)
    }
}
