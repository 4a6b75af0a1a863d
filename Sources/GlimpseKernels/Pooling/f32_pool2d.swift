/// 2-D max / average pooling of NCHW channel planes, one output row at a time. The window's input
/// rows are first reduced into one row (SIMD16 across the width) that carries the left and right
/// padding (−∞ for max, 0 for average); each output vector then takes the window's taps from that
/// row: contiguous loads at stride 1, every other float from the tap's column at stride 2,
/// lane by lane at larger strides. Nothing is copied per plane and no padded plane is built.
public enum PoolKind: Sendable {
    case max
    /// Average; `countIncludePad` divides by the full window even where it overlaps padding.
    case average(countIncludePad: Bool)
}

public enum Pool2D {
    /// Floats of scratch one `f32_pool2d_rows` needs: the padded row and the per-column divisors.
    public static func scratchCount(_ g: ConvGeometry) -> Int {
        f32_pool2d_rows.rowCount(g) + (g.outWidth + 15) / 16 * 16 + 16
    }
}

/// Pools one plane (convenience over `f32_pool2d_rows`, which keeps its set-up across planes).
public func f32_pool2d(input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, geometry g: ConvGeometry,
                       kind: PoolKind, scratch: UnsafeMutablePointer<Float>) {
    f32_pool2d_rows(geometry: g, kind: kind, scratch: scratch).run(input: input, output: output)
}

/// Pooling prepared for one geometry and one scratch buffer of `Pool2D.scratchCount(geometry)` floats
/// (padding of the row and column divisors set once), then run plane after plane.
public struct f32_pool2d_rows {
    let g: ConvGeometry
    let isMax: Bool
    let includePad: Bool
    /// The reduced row; index j holds input column j − padLeft.
    let row: UnsafeMutablePointer<Float>
    /// Average only: per output column, the taps counted (the whole width with `countIncludePad`).
    let colDivisor: UnsafeMutablePointer<Float>
    /// Max over windows of at most 3 columns at stride 2 that all lie inside the plane (SqueezeNet's
    /// 3×3 pools): `runStride2Max`, straight from the input.
    public let readsInput: Bool
    /// Planes at most 16 wide whose windows all lie inside the plane across (mnist-8's 3×3/3 pool on
    /// 14×14): `narrowRow`, in registers.
    public let narrow: Bool

    /// Floats of the padded row: every column a window reaches, and room for whole-vector reads
    /// past the last window (at most 32 floats at stride 2).
    static func rowCount(_ g: ConvGeometry) -> Int {
        let span = max((g.outWidth - 1) * g.strideW + (g.kernelWidth - 1) * g.dilationW + 1, g.padLeft + g.inWidth)
        return (span + 48 + 15) / 16 * 16
    }

    public init(geometry g: ConvGeometry, kind: PoolKind, scratch: UnsafeMutablePointer<Float>) {
        self.g = g
        switch kind {
        case .max:
            isMax = true
            includePad = true
        case .average(let cip):
            isMax = false
            includePad = cip
        }
        row = scratch
        readsInput = isMax && g.strideW == 2 && g.kernelWidth <= 3 && g.dilationW == 1 && g.padLeft == 0 && g.padTop == 0
            && (g.outWidth - 1) * 2 + g.kernelWidth <= g.inWidth
            && (g.outHeight - 1) * g.strideH + (g.kernelHeight - 1) * g.dilationH < g.inHeight
        narrow = g.inWidth <= 16 && g.padLeft == 0 && g.outWidth > 0
            && (g.outWidth - 1) * g.strideW + (g.kernelWidth - 1) * g.dilationW < g.inWidth
        let count = f32_pool2d_rows.rowCount(g)
        colDivisor = scratch + count
        // The padding columns are never rewritten by `run`, which only fills the input's columns.
        let fill: Float = isMax ? -.infinity : 0
        row.initialize(repeating: fill, count: count)
        let lanes = (g.outWidth + 15) / 16 * 16 + 16
        colDivisor.initialize(repeating: 1, count: lanes)
        if !isMax {
            for ow in 0..<g.outWidth {
                var n = 0
                for kw in 0..<g.kernelWidth {
                    let iw = ow * g.strideW - g.padLeft + kw * g.dilationW
                    if iw >= 0 && iw < g.inWidth { n += 1 }
                }
                colDivisor[ow] = Float(includePad ? g.kernelWidth : max(n, 1))
            }
        }
    }

    /// Pools the plane at `input` into `output`. `readable` is what may be read around `input` (the
    /// plane by default; see `Im2colPanelSource.readable`).
    public func run(input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, readable: Range<Int>? = nil) {
        let readable = readable ?? 0..<g.inPixels
        if readsInput {
            runStride2Max(input: input, output: output, readable: readable)
        } else if isMax { run(MaxOf.self, input: input, output: output, readable: readable) } else {
            run(SumOf.self, input: input, output: output, readable: readable)
        }
    }

    @inline(__always)
    private func run<R: RowReduce>(_: R.Type, input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, readable: Range<Int>) {
        let width = g.inWidth
        let inner = row + g.padLeft
        for oh in 0..<g.outHeight {
            // The window's rows that lie inside the plane.
            let top = oh * g.strideH - g.padTop
            var lo = 0, hi = g.kernelHeight
            while lo < hi && top + lo * g.dilationH < 0 { lo += 1 }
            while hi > lo && top + (hi - 1) * g.dilationH >= g.inHeight { hi -= 1 }
            if narrow && lo < hi && narrowRow(R.self, input: input, rows: (top + lo * g.dilationH)..<(top + hi * g.dilationH),
                                              readable: readable, out: output + oh * g.outWidth,
                                              rowDivisor: Float(includePad ? g.kernelHeight : hi - lo)) {
                continue
            }
            if lo == hi {
                inner.update(repeating: isMax ? -.infinity : 0, count: width)
            } else {
                let first = input + (top + lo * g.dilationH) * width
                let step = g.dilationH * width
                // Whole vectors; a last vector that would pass the row's end is taken ending at it
                // instead (overlapping the one before, which gives the same values).
                @inline(__always) func column(_ iw: Int) {
                    var p = first + iw
                    var v = UnsafeRawPointer(p).loadUnaligned(as: SIMD16<Float>.self)
                    for _ in (lo + 1)..<max(lo + 1, hi) {
                        p += step
                        v = R.combine(v, UnsafeRawPointer(p).loadUnaligned(as: SIMD16<Float>.self))
                    }
                    UnsafeMutableRawPointer(inner + iw).storeBytes(of: v, as: SIMD16<Float>.self)
                }
                if width >= 16 {
                    var iw = 0
                    while iw + 16 <= width {
                        column(iw)
                        iw += 16
                    }
                    if iw < width { column(width - 16) }
                } else {
                    for iw in 0..<width {
                        var v = first[iw]
                        var p = first + iw
                        for _ in (lo + 1)..<max(lo + 1, hi) {
                            p += step
                            v = R.combine(v, p.pointee)
                        }
                        inner[iw] = v
                    }
                }
            }
            let rowDivisor = Float(includePad ? g.kernelHeight : max(hi - lo, 1))
            let out = output + oh * g.outWidth
            if g.strideW > 2 {
                // Larger strides: lane by lane, straight to the output.
                for ow in 0..<g.outWidth {
                    let first = row + ow * g.strideW
                    var v = first[0]
                    for t in 1..<max(1, g.kernelWidth) { v = R.combine(v, first[t * g.dilationW]) }
                    out[ow] = isMax ? v : v / (colDivisor[ow] * rowDivisor)
                }
                continue
            }
            var ow = 0
            while ow < g.outWidth {
                var acc = window(R.self, ow)
                if !isMax {
                    acc = acc / (UnsafeRawPointer(colDivisor + ow).loadUnaligned(as: SIMD16<Float>.self) * rowDivisor)
                }
                store(acc, row: oh, column: ow, to: out)
                ow += 16
            }
        }
    }

    /// One output row of a `narrow` plane from the window's input rows `rows` (every `dilationH`-th):
    /// each tap's 16 columns read straight from those rows and reduced in one vector, whose lane
    /// ow·strideW is then output column ow. The row-buffer path did this a float at a time, with its
    /// values on the stack: 10% of mnist-8's time for 256 outputs. False, with nothing written, when
    /// a load would leave `readable`.
    @inline(__always)
    private func narrowRow<R: RowReduce>(_: R.Type, input: UnsafePointer<Float>, rows: Range<Int>, readable: Range<Int>,
                                         out: UnsafeMutablePointer<Float>, rowDivisor: Float) -> Bool {
        let width = g.inWidth, step = g.dilationH &* width
        let first = rows.lowerBound &* width
        let last = (rows.upperBound &- g.dilationH) &* width &+ (g.kernelWidth &- 1) &* g.dilationW &+ 16
        guard first >= readable.lowerBound && last <= readable.upperBound else { return false }
        var acc = UnsafeRawPointer(input + first).loadUnaligned(as: SIMD16<Float>.self)
        var r = first
        while r < rows.upperBound &* width {
            var t = 0
            while t < g.kernelWidth {
                if r != first || t != 0 {
                    acc = R.combine(acc, UnsafeRawPointer(input + (r &+ t &* g.dilationW)).loadUnaligned(as: SIMD16<Float>.self))
                }
                t &+= 1
            }
            r &+= step
        }
        for ow in 0..<g.outWidth {
            let v = acc[ow &* g.strideW]
            out[ow] = isMax ? v : v / (colDivisor[ow] * rowDivisor)
        }
        return true
    }

    /// Max pooling at stride 2 over windows inside the plane, 16 output columns at a time, in
    /// registers: per window row, two 32-float loads at the window's first column give taps 0 and 1
    /// (their even and odd lanes), two more 2 floats on give tap 2. The general path reduces the
    /// window's rows into a row buffer first, and reading that back 4 or 8 bytes off the stores that
    /// wrote it stalled every load: 60 µs for SqueezeNet's 27 → 13 pool against onnxruntime's 16.
    /// Blocks whose loads would leave `readable` (at the end of a tensor) are done lane by lane.
    private func runStride2Max(input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, readable: Range<Int>) {
        if g.kernelWidth == 3 && g.kernelHeight == 3 && g.dilationH == 1 {
            runStride2Max3x3(input: input, output: output, readable: readable)
            return
        }
        let width = g.inWidth, taps = g.kernelWidth, rows = g.kernelHeight
        let rowStep = g.dilationH &* width
        for oh in 0..<g.outHeight {
            let top = oh &* g.strideH &* width
            let out = output + oh &* g.outWidth
            var ow = 0
            while ow < g.outWidth {
                let first = top &+ 2 &* ow
                // The last float a block reads: tap 2's second load in the window's last row.
                let last = first &+ (rows &- 1) &* rowStep &+ 33
                var acc: SIMD16<Float>
                if first >= readable.lowerBound && last < readable.upperBound {
                    var p = UnsafeRawPointer(input + first)
                    var a = p.loadUnaligned(as: SIMD16<Float>.self), b = p.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
                    var c = SIMD16<Float>(), d = SIMD16<Float>()
                    if taps == 3 {
                        c = p.loadUnaligned(fromByteOffset: 8, as: SIMD16<Float>.self)
                        d = p.loadUnaligned(fromByteOffset: 72, as: SIMD16<Float>.self)
                    }
                    for _ in 1..<max(1, rows) {
                        p += rowStep &* 4
                        a = simdMax(a, p.loadUnaligned(as: SIMD16<Float>.self))
                        b = simdMax(b, p.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self))
                        if taps == 3 {
                            c = simdMax(c, p.loadUnaligned(fromByteOffset: 8, as: SIMD16<Float>.self))
                            d = simdMax(d, p.loadUnaligned(fromByteOffset: 72, as: SIMD16<Float>.self))
                        }
                    }
                    acc = f32_pool2d_rows.evenLanes(a, b)
                    if taps >= 2 { acc = simdMax(acc, SIMD16(lowHalf: a.oddHalf, highHalf: b.oddHalf)) }
                    if taps == 3 { acc = simdMax(acc, f32_pool2d_rows.evenLanes(c, d)) }
                } else {
                    acc = SIMD16(repeating: -.infinity)
                    for j in 0..<min(16, g.outWidth &- ow) {
                        var v = -Float.infinity
                        for r in 0..<rows { for t in 0..<taps { v = MaxOf.combine(v, input[first &+ r &* rowStep &+ 2 &* j &+ t]) } }
                        acc[j] = v
                    }
                }
                store(acc, row: oh, column: ow, to: out)
                ow &+= 16
            }
        }
    }

    /// `runStride2Max` for 3×3 windows (SqueezeNet's and ResNet's pools) with nothing left generic:
    /// the three rows' maxima at the block's first column and 2 floats on, 12 loads per 16 outputs,
    /// and no loop over rows or taps (the generic loops kept 20-odd values on the stack and took
    /// 28 cycles per 16 outputs). Rows whose blocks would read past `readable` go lane by lane.
    private func runStride2Max3x3(input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, readable: Range<Int>) {
        let width = g.inWidth
        let row1 = width &* 4, row2 = width &* 8
        // One window row's maximum over its three taps for 16 outputs.
        @inline(__always) func row(_ p: UnsafeRawPointer) -> SIMD16<Float> {
            let a = p.loadUnaligned(as: SIMD16<Float>.self), b = p.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
            let c = p.loadUnaligned(fromByteOffset: 8, as: SIMD16<Float>.self)
            let d = p.loadUnaligned(fromByteOffset: 72, as: SIMD16<Float>.self)
            return simdMax(simdMax(f32_pool2d_rows.evenLanes(a, b), SIMD16(lowHalf: a.oddHalf, highHalf: b.oddHalf)), f32_pool2d_rows.evenLanes(c, d))
        }
        let blocks = (g.outWidth &+ 15) / 16
        for oh in 0..<g.outHeight {
            let top = oh &* g.strideH &* width
            let out = output + oh &* g.outWidth
            // The last float the row's blocks read: the third row's, 2 + 32 floats into the last block.
            guard top >= readable.lowerBound && top &+ 2 &* width &+ (blocks &- 1) &* 32 &+ 34 <= readable.upperBound else {
                for ow in 0..<g.outWidth {
                    let first = top &+ 2 &* ow
                    var v = -Float.infinity
                    for r in 0..<3 { for t in 0..<3 { v = MaxOf.combine(v, input[first &+ r &* width &+ t]) } }
                    out[ow] = v
                }
                continue
            }
            var p = UnsafeRawPointer(input + top)
            var ow = 0
            while ow < g.outWidth {
                store(simdMax(simdMax(row(p), row(p + row1)), row(p + row2)), row: oh, column: ow, to: out)
                p += 128
                ow &+= 16
            }
        }
    }

    /// Floats p[0], p[2], …, p[30]: the even halves of two vectors, joined (one `vpermt2ps`, as in
    /// `PhasePlanes.fillStride2Row`). Odd taps read from p + 1.
    @inline(__always)
    static func evenLanes(_ p: UnsafePointer<Float>) -> SIMD16<Float> {
        let r = UnsafeRawPointer(p)
        return evenLanes(r.loadUnaligned(as: SIMD16<Float>.self), r.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self))
    }

    /// The even lanes of `v0` then those of `v1` (one `vpermt2ps`).
    @inline(__always)
    static func evenLanes(_ v0: SIMD16<Float>, _ v1: SIMD16<Float>) -> SIMD16<Float> {
        SIMD16(lowHalf: v0.evenHalf, highHalf: v1.evenHalf)
    }

    /// Stores output columns `ow..<ow+16` of output row `oh` (`out` is that row): a whole vector
    /// where it ends inside this plane's output (an overrun into the next rows is rewritten by
    /// them), lane by lane at the plane's end.
    @inline(__always)
    private func store(_ v: SIMD16<Float>, row oh: Int, column ow: Int, to out: UnsafeMutablePointer<Float>) {
        if (g.outHeight &- oh) &* g.outWidth &- ow >= 16 {
            UnsafeMutableRawPointer(out + ow).storeBytes(of: v, as: SIMD16<Float>.self)
        } else {
            for t in 0..<(g.outWidth &- ow) { out[ow &+ t] = v[t] }
        }
    }

    /// The reduction over the window's columns of 16 output columns from `ow`, read from `row`.
    @inline(__always)
    private func window<R: RowReduce>(_: R.Type, _ ow: Int) -> SIMD16<Float> {
        let taps = g.kernelWidth, dilation = g.dilationW
        if g.strideW == 1 {
            let base = row + ow
            var acc = UnsafeRawPointer(base).loadUnaligned(as: SIMD16<Float>.self)
            for t in 1..<max(1, taps) {
                acc = R.combine(acc, UnsafeRawPointer(base + t * dilation).loadUnaligned(as: SIMD16<Float>.self))
            }
            return acc
        }
        // Stride 2 (`run` takes larger strides lane by lane).
        let base = row + 2 * ow
        var acc = f32_pool2d_rows.evenLanes(base)
        for t in 1..<max(1, taps) { acc = R.combine(acc, f32_pool2d_rows.evenLanes(base + t * dilation)) }
        return acc
    }
}

/// Scalar reference pooling over one plane.
public func f32_pool2d_reference(input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>,
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

protocol RowReduce {
    static func combine(_ a: Float, _ b: Float) -> Float
    static func combine(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float>
}

enum MaxOf: RowReduce {
    @inline(__always) static func combine(_ a: Float, _ b: Float) -> Float { b > a ? b : a }
    @inline(__always) static func combine(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float> { simdMax(a, b) }
}

enum SumOf: RowReduce {
    @inline(__always) static func combine(_ a: Float, _ b: Float) -> Float { a + b }
    @inline(__always) static func combine(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float> { a + b }
}
