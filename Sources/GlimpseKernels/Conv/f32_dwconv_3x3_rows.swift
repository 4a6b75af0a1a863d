/// Direct 3×3 depthwise convolution of one plane (stride 1 or 2, no dilation, such as MobileNetV2's
/// and EfficientNet's), with no padded copy of the plane.
///
/// Every output vector (16 pixels of a row) reads its taps straight from the input rows: stride 1
/// as unaligned loads, stride 2 as pairs of loads split into even and odd columns. Several output
/// rows are computed together (4 at stride 1, 2 at stride 2), so each input vector loaded serves
/// every output row whose window covers it, and the nine weights stay in registers. A row's last
/// vector ends at the row's end, overlapping the one before it instead of a partial store; in
/// planes narrower than 16 each row is one vector whose extra lanes spill into the next rows, which
/// are stored after it (lane by lane at the plane's end), down to `minOutWidth`. Vectors
/// whose window crosses the left or right edge zero the lanes outside the plane; the few rows whose
/// window crosses the top or bottom edge are computed one vector at a time, skipping those rows.
public enum f32_dwconv_3x3_rows {
    /// Narrower outputs (7×7) waste too many lanes: `DepthwisePlane` is faster there.
    public static let minOutWidth = 8

    public static func applies(_ g: ConvGeometry) -> Bool {
        g.kernelHeight == 3 && g.kernelWidth == 3 && g.dilationH == 1 && g.dilationW == 1
            && g.strideH == g.strideW && (g.strideH == 1 || g.strideH == 2)
            && g.outWidth >= minOutWidth && (0...2).contains(g.padLeft) && (0...2).contains(g.padTop)
    }

    /// One channel: `input` is its H×W plane and `readable` the offsets from `input` that may be
    /// read (see `Im2colPanelSource.readable`); `weights` its 9 taps, row-major; `output` its OH×OW plane. The
    /// epilogue applies with row 0 and column = output pixel; its `rowBias` is ignored (pass `bias`).
    public static func run(input: UnsafePointer<Float>, readable: Range<Int>, weights: UnsafePointer<Float>, bias: Float,
                           geometry g: ConvGeometry, output: UnsafeMutablePointer<Float>, epilogue e0: GemmEpilogue) {
        var epilogue = e0
        epilogue.rowBias = nil
        if epilogue.isRegisterFriendly && epilogue.residual == nil && !epilogue.swish {
            let clamp = ClampStore(output: output, lower: SIMD16(repeating: epilogue.lowerBound),
                                   upper: SIMD16(repeating: epilogue.upperBound))
            Plane(input: input, readable: readable, weights: weights, bias: bias, g: g, out: clamp).run()
        } else if epilogue.isRegisterFriendly && epilogue.residual == nil && epilogue.lowerBound == -.infinity
                    && epilogue.upperBound == .infinity {
            Plane(input: input, readable: readable, weights: weights, bias: bias, g: g, out: SwishStore(output: output)).run()
        } else {
            Plane(input: input, readable: readable, weights: weights, bias: bias, g: g,
                  out: EpilogueStore(output: output, epilogue: epilogue)).run()
        }
    }

    /// How an output vector is finished and stored. Lanes `first..<end` of the vector at `pixel`
    /// are due: lanes before `first` were stored already (a row's last vector overlaps the one
    /// before it), lanes from `end` on lie past the row (planes narrower than 16). `spill` allows
    /// storing those lanes anyway: they belong to the plane's next row, which is stored later.
    protocol Store {
        func store(_ acc: SIMD16<Float>, pixel: Int, first: Int, end: Int, spill: Bool)
        /// Stores all 16 lanes, with no branch (the row blocks' stores).
        func storeAll(_ acc: SIMD16<Float>, pixel: Int)
        /// Whether storing a lane twice, or junk ahead of its turn, is harmless.
        var rewritable: Bool { get }
    }

    /// An activation applied lane by lane with no other input: branch-free, and storing an overlapped
    /// lane again is harmless.
    protocol PointwiseStore: Store {
        var output: UnsafeMutablePointer<Float> { get }
        func activate(_ v: SIMD16<Float>) -> SIMD16<Float>
    }

    /// A clamp (ReLU, ReLU6 or none).
    struct ClampStore: PointwiseStore {
        let output: UnsafeMutablePointer<Float>
        let lower: SIMD16<Float>
        let upper: SIMD16<Float>

        @inline(__always)
        func activate(_ v: SIMD16<Float>) -> SIMD16<Float> { simdClamp(v, lower, upper) }
    }

    /// Swish alone (EfficientNet's depthwise layers).
    struct SwishStore: PointwiseStore {
        let output: UnsafeMutablePointer<Float>

        @inline(__always)
        func activate(_ v: SIMD16<Float>) -> SIMD16<Float> { v * simdSigmoid(v) }
    }

    /// Any other epilogue. When it reads a residual, which the output may alias, no lane is stored
    /// twice or ahead of its turn.
    struct EpilogueStore: Store {
        let output: UnsafeMutablePointer<Float>
        let epilogue: GemmEpilogue

        var rewritable: Bool { epilogue.residual == nil }

        @inline(__always)
        func storeAll(_ acc: SIMD16<Float>, pixel: Int) {
            UnsafeMutableRawPointer(output + pixel).storeBytes(of: epilogue.apply(acc, row: 0, col: pixel), as: SIMD16<Float>.self)
        }

        @inline(__always)
        func store(_ acc: SIMD16<Float>, pixel: Int, first: Int, end: Int, spill: Bool) {
            if (first == 0 && end == 16) || (epilogue.residual == nil && (end == 16 || spill)) {
                UnsafeMutableRawPointer(output + pixel).storeBytes(of: epilogue.apply(acc, row: 0, col: pixel), as: SIMD16<Float>.self)
            } else {
                storeLanes(acc, pixel: pixel, first, end)
            }
        }

        @inline(never)
        func storeLanes(_ acc: SIMD16<Float>, pixel: Int, _ first: Int, _ end: Int) {
            epilogue.store(acc, row: 0, col: pixel, lanes: first..<end, to: output + pixel)
        }
    }

    /// What happens to each tap's loaded vector: nothing inside the plane, zeroing of the lanes
    /// outside it at the left and right edges.
    protocol TapMask {
        func apply(_ v: SIMD16<Float>, kw: Int) -> SIMD16<Float>
    }

    struct Inside: TapMask {
        @inline(__always)
        func apply(_ v: SIMD16<Float>, kw: Int) -> SIMD16<Float> { v }
    }

    struct Edge: TapMask {
        let m0: SIMDMask<SIMD16<Int32>>
        let m1: SIMDMask<SIMD16<Int32>>
        let m2: SIMDMask<SIMD16<Int32>>

        @inline(__always)
        func apply(_ v: SIMD16<Float>, kw: Int) -> SIMD16<Float> {
            SIMD16<Float>().replacing(with: v, where: kw == 0 ? m0 : kw == 1 ? m1 : m2)
        }
    }

    struct Plane<S: Store> {
        let input: UnsafePointer<Float>
        let readable: Range<Int>
        let weights: UnsafePointer<Float>
        let bias: Float
        let g: ConvGeometry
        let out: S

        @inline(never)
        func run() {
            let s = g.strideH
            // Output rows yInside..<yEnd read only rows inside the plane.
            let yInside = min(g.outHeight, (g.padTop + s - 1) / s)
            let lastStart = g.inHeight - 3 + g.padTop
            let yEnd = lastStart < 0 ? yInside : max(yInside, min(g.outHeight, lastStart / s + 1))
            for y in 0..<yInside { edgeRow(y) }
            var y = yInside
            while y < yEnd {
                let rows = min(s == 1 ? 4 : 2, yEnd - y)
                blockRow(y, rows: rows)
                y += rows
            }
            for y in yEnd..<g.outHeight { edgeRow(y) }
        }

        /// Lanes l whose input column `start + stride·l` lies in the row.
        @inline(__always)
        func columnsInside(_ start: Int) -> SIMDMask<SIMD16<Int32>> {
            // Float lanes: Swift compiles SIMD16<Int32> comparisons lane by lane.
            let ramp = SIMD16<Float>(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
            let cols = SIMD16<Float>(repeating: Float(start)) + ramp * Float(g.strideW)
            return (cols .>= 0) .& (cols .< SIMD16<Float>(repeating: Float(g.inWidth)))
        }

        /// Stores output row y's vector at column x; the row's vector before it ended at `previousEnd`.
        @inline(__always)
        func store(_ acc: SIMD16<Float>, y: Int, x: Int, previousEnd: Int) {
            let pixel = y &* g.outWidth &+ x
            out.store(acc, pixel: pixel, first: previousEnd &- x, end: min(16, g.outWidth &- x),
                      spill: pixel &+ 16 <= g.outPixels)
        }

        /// Where the vector that follows `previousEnd` in a row starts: 16 further, or moved back to
        /// end at the row's end (at 0 in planes narrower than 16).
        @inline(__always)
        func vectorStart(_ previousEnd: Int) -> Int {
            max(0, min(previousEnd, g.outWidth &- 16))
        }

        /// Each vector of output row y, one at a time, skipping the window rows outside the plane.
        @inline(never)
        func edgeRow(_ y: Int) {
            var x0 = 0
            while x0 < g.outWidth {
                let x = vectorStart(x0)
                store(edgeVector(y: y, x: x), y: y, x: x, previousEnd: x0)
                x0 += 16
            }
        }

        @inline(__always)
        func edgeVector(y: Int, x: Int) -> SIMD16<Float> {
            let s = g.strideW
            var acc = SIMD16<Float>(repeating: bias)
            for kh in 0..<3 {
                let iy = y * g.strideH + kh - g.padTop
                guard iy >= 0 && iy < g.inHeight else { continue }
                for kw in 0..<3 {
                    let start = x * s + kw - g.padLeft
                    let inside = columnsInside(start)
                    let offset = iy * g.inWidth + start
                    var v = SIMD16<Float>()
                    if offset >= readable.lowerBound && offset + 16 * s <= readable.upperBound {
                        let r = UnsafeRawPointer(input + offset)
                        let a = r.loadUnaligned(as: SIMD16<Float>.self)
                        v = s == 1 ? a : SIMD16(lowHalf: a.evenHalf, highHalf: r.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self).evenHalf)
                        v = SIMD16<Float>().replacing(with: v, where: inside)
                    } else {
                        for l in 0..<16 where inside[l] { v[l] = input[offset + l * s] }
                    }
                    acc.addProduct(v, SIMD16(repeating: weights[kh * 3 + kw]))
                }
            }
            return acc
        }

        /// Whether the block of `rowsIn` input rows from row `iy`, columns `e` to `e + span`, lies in
        /// the readable memory.
        @inline(__always)
        func readableBlock(iy: Int, e: Int, rowsIn: Int, span: Int) -> Bool {
            let first = iy &* g.inWidth &+ e
            return first >= readable.lowerBound && first &+ (rowsIn &- 1) &* g.inWidth &+ span <= readable.upperBound
        }

        /// Kernel row kh's three taps of one window row, added to `acc`.
        @inline(__always)
        func taps(_ acc: inout SIMD16<Float>, _ kh: Int, _ v0: SIMD16<Float>, _ v1: SIMD16<Float>, _ v2: SIMD16<Float>) {
            acc.addProduct(v0, SIMD16(repeating: weights[kh &* 3]))
            acc.addProduct(v1, SIMD16(repeating: weights[kh &* 3 &+ 1]))
            acc.addProduct(v2, SIMD16(repeating: weights[kh &* 3 &+ 2]))
        }

        /// The three taps of one window row at column x (`r` points at its column x·stride − padLeft).
        @inline(__always)
        func rowTaps(_ r: UnsafePointer<Float>) -> (SIMD16<Float>, SIMD16<Float>, SIMD16<Float>) {
            g.strideW == 1 ? rowTaps1(r, Inside()) : rowTaps2(r, Inside())
        }

        @inline(__always)
        func rowTaps1<M: TapMask>(_ r: UnsafePointer<Float>, _ m: M) -> (SIMD16<Float>, SIMD16<Float>, SIMD16<Float>) {
            let q = UnsafeRawPointer(r)
            return (m.apply(q.loadUnaligned(as: SIMD16<Float>.self), kw: 0),
                    m.apply(q.loadUnaligned(fromByteOffset: 4, as: SIMD16<Float>.self), kw: 1),
                    m.apply(q.loadUnaligned(fromByteOffset: 8, as: SIMD16<Float>.self), kw: 2))
        }

        /// Stride 2: columns 2l (kw 0), 1 + 2l (kw 1) and 2 + 2l (kw 2).
        @inline(__always)
        func rowTaps2<M: TapMask>(_ r: UnsafePointer<Float>, _ m: M) -> (SIMD16<Float>, SIMD16<Float>, SIMD16<Float>) {
            let q = UnsafeRawPointer(r)
            let lo = q.loadUnaligned(as: SIMD16<Float>.self), hi = q.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
            let lo2 = q.loadUnaligned(fromByteOffset: 8, as: SIMD16<Float>.self)
            let hi2 = q.loadUnaligned(fromByteOffset: 72, as: SIMD16<Float>.self)
            return (m.apply(SIMD16(lowHalf: lo.evenHalf, highHalf: hi.evenHalf), kw: 0),
                    m.apply(SIMD16(lowHalf: lo.oddHalf, highHalf: hi.oddHalf), kw: 1),
                    m.apply(SIMD16(lowHalf: lo2.evenHalf, highHalf: hi2.evenHalf), kw: 2))
        }

        /// Output rows y0..<y0+rows (all of whose window rows lie inside the plane), vector by vector.
        @inline(never)
        func blockRow(_ y0: Int, rows: Int) {
            let s = g.strideW, width = g.inWidth
            let iy = y0 &* g.strideH &- g.padTop
            let span = s == 1 ? 18 : 34
            let full = rows == (s == 1 ? 4 : 2)
            var x0 = 0
            while x0 < g.outWidth {
                let x = vectorStart(x0)
                let e = x &* s &- g.padLeft
                let p = input + (iy &* width &+ e)
                let inside = e >= 0 && e &+ span <= width
                // Whole-vector stores for every row of the block: no lane stored twice, or the store
                // may; no lane past the row, or it may spill into rows stored later in this plane.
                let wholeStores = (x == x0 || out.rewritable)
                    && (g.outWidth &- x >= 16 || (out.rewritable && (y0 &+ rows &- 1) &* g.outWidth &+ x &+ 16 <= g.outPixels))
                if inside || readableBlock(iy: iy, e: e, rowsIn: (rows &- 1) &* g.strideH &+ 3, span: span) {
                    if !full || !wholeStores {
                        rowByRow(p, y0: y0, rows: rows, x: x, previousEnd: x0, masked: !inside)
                    } else if inside {
                        if s == 1 { fourRows1(p, y0: y0, x: x, Inside()) } else { twoRows2(p, y0: y0, x: x, Inside()) }
                    } else {
                        let edge = Edge(m0: columnsInside(e), m1: columnsInside(e &+ 1), m2: columnsInside(e &+ 2))
                        if s == 1 { fourRows1(p, y0: y0, x: x, edge) } else { twoRows2(p, y0: y0, x: x, edge) }
                    }
                } else {
                    for y in y0..<(y0 &+ rows) { store(edgeVector(y: y, x: x), y: y, x: x, previousEnd: x0) }
                }
                x0 &+= 16
            }
        }

        /// Stride 1, four output rows at column x; `p` is the first window row's column x − padLeft.
        /// Each of the six window rows is loaded once and feeds every output row it belongs to.
        @inline(__always)
        func fourRows1<M: TapMask>(_ p: UnsafePointer<Float>, y0: Int, x: Int, _ m: M) {
            let width = g.inWidth
            let b = SIMD16<Float>(repeating: bias)
            var a0 = b, a1 = b, a2 = b, a3 = b
            var v = rowTaps1(p, m)
            taps(&a0, 0, v.0, v.1, v.2)
            v = rowTaps1(p + width, m)
            taps(&a0, 1, v.0, v.1, v.2); taps(&a1, 0, v.0, v.1, v.2)
            v = rowTaps1(p + 2 &* width, m)
            taps(&a0, 2, v.0, v.1, v.2); taps(&a1, 1, v.0, v.1, v.2); taps(&a2, 0, v.0, v.1, v.2)
            v = rowTaps1(p + 3 &* width, m)
            taps(&a1, 2, v.0, v.1, v.2); taps(&a2, 1, v.0, v.1, v.2); taps(&a3, 0, v.0, v.1, v.2)
            v = rowTaps1(p + 4 &* width, m)
            taps(&a2, 2, v.0, v.1, v.2); taps(&a3, 1, v.0, v.1, v.2)
            v = rowTaps1(p + 5 &* width, m)
            taps(&a3, 2, v.0, v.1, v.2)
            out.storeAll(a0, pixel: (y0) &* g.outWidth &+ x)
            out.storeAll(a1, pixel: (y0 &+ 1) &* g.outWidth &+ x)
            out.storeAll(a2, pixel: (y0 &+ 2) &* g.outWidth &+ x)
            out.storeAll(a3, pixel: (y0 &+ 3) &* g.outWidth &+ x)
        }

        /// Stride 2, two output rows at column x; `p` is the first window row's column 2x − padLeft.
        /// The middle one of the five window rows feeds both.
        @inline(__always)
        func twoRows2<M: TapMask>(_ p: UnsafePointer<Float>, y0: Int, x: Int, _ m: M) {
            let width = g.inWidth
            let b = SIMD16<Float>(repeating: bias)
            var a0 = b, a1 = b
            var v = rowTaps2(p, m)
            taps(&a0, 0, v.0, v.1, v.2)
            v = rowTaps2(p + width, m)
            taps(&a0, 1, v.0, v.1, v.2)
            v = rowTaps2(p + 2 &* width, m)
            taps(&a0, 2, v.0, v.1, v.2); taps(&a1, 0, v.0, v.1, v.2)
            v = rowTaps2(p + 3 &* width, m)
            taps(&a1, 1, v.0, v.1, v.2)
            v = rowTaps2(p + 4 &* width, m)
            taps(&a1, 2, v.0, v.1, v.2)
            out.storeAll(a0, pixel: (y0) &* g.outWidth &+ x)
            out.storeAll(a1, pixel: (y0 &+ 1) &* g.outWidth &+ x)
        }

        /// Output rows y0..<y0+rows at column x one at a time (a short last block, or a vector at
        /// the left or right edge, whose lanes outside the plane are zeroed when `masked`).
        @inline(never)
        func rowByRow(_ p: UnsafePointer<Float>, y0: Int, rows: Int, x: Int, previousEnd: Int, masked: Bool) {
            let e = x &* g.strideW &- g.padLeft
            let all = SIMD16<Float>() .== SIMD16<Float>()
            let m0 = masked ? columnsInside(e) : all, m1 = masked ? columnsInside(e &+ 1) : all
            let m2 = masked ? columnsInside(e &+ 2) : all
            for j in 0..<rows {
                var a = SIMD16<Float>(repeating: bias)
                for kh in 0..<3 {
                    let v = rowTaps(p + (j &* g.strideH &+ kh) &* g.inWidth)
                    taps(&a, kh, SIMD16<Float>().replacing(with: v.0, where: m0), SIMD16<Float>().replacing(with: v.1, where: m1),
                         SIMD16<Float>().replacing(with: v.2, where: m2))
                }
                store(a, y: y0 &+ j, x: x, previousEnd: previousEnd)
            }
        }
    }
}

extension f32_dwconv_3x3_rows.PointwiseStore {
    var rewritable: Bool { true }

    @inline(__always)
    func storeAll(_ acc: SIMD16<Float>, pixel: Int) {
        UnsafeMutableRawPointer(output + pixel).storeBytes(of: activate(acc), as: SIMD16<Float>.self)
    }

    @inline(__always)
    func store(_ acc: SIMD16<Float>, pixel: Int, first: Int, end: Int, spill: Bool) {
        let v = activate(acc)
        if end == 16 || spill {
            UnsafeMutableRawPointer(output + pixel).storeBytes(of: v, as: SIMD16<Float>.self)
        } else {
            GemmEpilogue.store(v, lanes: first..<end, to: output + pixel)
        }
    }
}
