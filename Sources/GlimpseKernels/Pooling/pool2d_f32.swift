/// 2-D max / average pooling of one NCHW channel plane, SIMD16 over the flat output of the same
/// padded phase-split copy as the depthwise kernel (`PhasePlanes`).
public enum PoolKind: Sendable {
    case max
    /// Average; `countIncludePad` divides by the full window even where it overlaps padding.
    case average(countIncludePad: Bool)
}

public enum Pool2D {
    public static func scratchCount(_ g: ConvGeometry) -> Int {
        PhasePlanes(g).scratchCount + g.outWidth + 32 + g.outHeight + 16 + 2 * g.kernelHeight * g.kernelWidth
    }
}

/// Max or average over the window of one plane, through the flat sweep of `PhasePlanes` (padding
/// is −∞ for max, 0 for average; the average divides by the per-pixel count of counted taps).
public func pool2d_f32(input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, geometry g: ConvGeometry,
                       kind: PoolKind, scratch: UnsafeMutablePointer<Float>) {
    PoolPlane(geometry: g, kind: kind, scratch: scratch).run(input: input, output: output)
}

/// Pooling prepared for one geometry and one scratch buffer (layout, tap offsets and tap counts
/// computed once), run plane after plane.
public struct PoolPlane {
    let planes: PhasePlanes
    let isMax: Bool
    let flat: UnsafeMutablePointer<Float>
    let phases: UnsafeMutablePointer<Float>
    let colCount: UnsafeMutablePointer<Float>
    let rowCount: UnsafeMutablePointer<Float>
    let offsets: UnsafeMutablePointer<Int>
    let taps: Int

    /// `scratch` holds `Pool2D.scratchCount(geometry)` floats.
    public init(geometry g: ConvGeometry, kind: PoolKind, scratch: UnsafeMutablePointer<Float>) {
        var includePad = true
        switch kind {
        case .max: isMax = true
        case .average(let cip):
            isMax = false
            includePad = cip
        }
        planes = PhasePlanes(g)
        flat = scratch
        phases = scratch + planes.flatCount
        // Per-column and per-row counts of taps inside the image (average), then the tap offsets.
        colCount = phases + planes.phaseCount * planes.phaseSize
        rowCount = colCount + (g.outWidth + 16 + 15) / 16 * 16
        taps = g.kernelHeight * g.kernelWidth
        offsets = UnsafeMutableRawPointer(rowCount + (g.outHeight + 15) / 16 * 16).bindMemory(to: Int.self, capacity: taps)
        planes.tapOffsets(offsets)
        for ow in 0..<g.outWidth {
            var n = 0
            for kw in 0..<g.kernelWidth {
                let iw = ow * g.strideW - g.padLeft + kw * g.dilationW
                if iw >= 0 && iw < g.inWidth { n += 1 }
            }
            colCount[ow] = Float(includePad ? g.kernelWidth : n)
        }
        for ow in g.outWidth..<(g.outWidth + 16) { colCount[ow] = 1 }
        for oh in 0..<g.outHeight {
            var n = 0
            for kh in 0..<g.kernelHeight {
                let ih = oh * g.strideH - g.padTop + kh * g.dilationH
                if ih >= 0 && ih < g.inHeight { n += 1 }
            }
            rowCount[oh] = Float(includePad ? g.kernelHeight : n)
        }
    }

    public func run(input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>) {
        planes.fill(input: input, padValue: isMax ? -.infinity : 0, phases: phases)
        let rows = planes.geometry.outWidth >= PhasePlanes.rowSweepMinWidth
        if isMax {
            let store = PoolStore(output: output, colCount: nil, rowCount: nil)
            if rows {
                planes.sweepRows(WindowMax(), phases: phases, offsets: offsets, taps: taps, store: store)
            } else {
                planes.sweep(WindowMax(), phases: phases, offsets: offsets, taps: taps, flat: flat)
                planes.compact(flat, store)
            }
        } else {
            let store = PoolStore(output: output, colCount: UnsafePointer(colCount), rowCount: UnsafePointer(rowCount))
            if rows {
                planes.sweepRows(WindowSum(), phases: phases, offsets: offsets, taps: taps, store: store)
            } else {
                planes.sweep(WindowSum(), phases: phases, offsets: offsets, taps: taps, flat: flat)
                planes.compact(flat, store)
            }
        }
    }
}

struct WindowMax: WindowReduce {
    @inline(__always) init() {}
    @inline(__always) func start() -> SIMD16<Float> { SIMD16(repeating: -.infinity) }
    @inline(__always) func combine(_ acc: inout SIMD16<Float>, tap: Int, _ v: SIMD16<Float>) { acc = simdMax(acc, v) }
}

struct WindowSum: WindowReduce {
    @inline(__always) init() {}
    @inline(__always) func start() -> SIMD16<Float> { SIMD16() }
    @inline(__always) func combine(_ acc: inout SIMD16<Float>, tap: Int, _ v: SIMD16<Float>) { acc += v }
}

/// Stores pooled vectors, dividing averages by (taps counted in the row) × (taps counted in the column).
struct PoolStore: PlaneStore {
    let output: UnsafeMutablePointer<Float>
    let colCount: UnsafePointer<Float>?
    let rowCount: UnsafePointer<Float>?

    @inline(__always)
    init(output: UnsafeMutablePointer<Float>, colCount: UnsafePointer<Float>?, rowCount: UnsafePointer<Float>?) {
        self.output = output
        self.colCount = colCount
        self.rowCount = rowCount
    }

    @inline(__always)
    func scaled(_ v: SIMD16<Float>, y: Int, x: Int) -> SIMD16<Float> {
        guard let colCount, let rowCount else { return v }
        return v / (UnsafeRawPointer(colCount + x).loadUnaligned(as: SIMD16<Float>.self) * rowCount[y])
    }

    @inline(__always)
    func full(_ v: SIMD16<Float>, y: Int, x: Int, pixel: Int) {
        UnsafeMutableRawPointer(output + pixel).storeBytes(of: scaled(v, y: y, x: x), as: SIMD16<Float>.self)
    }

    @inline(never)
    func partial(_ v: SIMD16<Float>, y: Int, x: Int, pixel: Int, valid: Int) {
        let r = scaled(v, y: y, x: x)
        for j in 0..<valid { output[pixel + j] = r[j] }
    }
}

/// Scalar reference pooling over one plane.
public func pool2d_f32_reference(input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>,
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

/// Pooling of a narrow plane whose windows all lie inside it (no padding, no partial window), as in
/// LeNet-style classifiers: each output row first reduces its KH input rows into one row, then takes
/// the KW taps of each window from that row. On such planes the phase-plane copies of `PoolPlane`
/// cost more than the pooling itself.
public enum SmallPool {
    /// Widest input row this path takes.
    public static let maxWidth = 64

    public static func applies(_ g: ConvGeometry) -> Bool {
        g.padTop == 0 && g.padLeft == 0 && g.inWidth <= maxWidth && g.outHeight > 0 && g.outWidth > 0
            && (g.outHeight - 1) * g.strideH + (g.kernelHeight - 1) * g.dilationH < g.inHeight
            && (g.outWidth - 1) * g.strideW + (g.kernelWidth - 1) * g.dilationW < g.inWidth
    }

    /// Floats of scratch `run` needs (one reduced row and room for whole-vector reads past it).
    public static let scratchCount = 2 * maxWidth

    /// One plane; the geometry must satisfy `applies`. Average divides by the whole window (no
    /// window overlaps padding here, so both `countIncludePad` settings agree).
    public static func run(input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, geometry g: ConvGeometry,
                           isMax: Bool, scratch row: UnsafeMutablePointer<Float>) {
        if isMax {
            run(MaxOf.self, input: input, output: output, geometry: g, scale: 1, scratch: row)
        } else {
            run(SumOf.self, input: input, output: output, geometry: g, scale: 1 / Float(g.kernelHeight * g.kernelWidth),
                scratch: row)
        }
    }

    @inline(__always)
    static func run<R: SmallReduce>(_: R.Type, input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>,
                                    geometry g: ConvGeometry, scale: Float, scratch row: UnsafeMutablePointer<Float>) {
        let width = g.inWidth
        // The row scratch holds 2·maxWidth floats, so the pair loads (up to float 2·(outWidth − 1) + 32
        // ≤ width + 31) stay inside it; lanes past the row are never stored.
        let pairs = g.strideW == 2 && g.kernelWidth == 2 && g.dilationW == 1
        for oh in 0..<g.outHeight {
            let top = input + oh * g.strideH * width
            if g.kernelHeight == 1 {
                row.update(from: top, count: width)
            } else {
                let second = top + g.dilationH * width
                for iw in 0..<width { row[iw] = R.combine(top[iw], second[iw]) }
            }
            for kh in 2..<max(2, g.kernelHeight) {
                let p = top + kh * g.dilationH * width
                for iw in 0..<width { row[iw] = R.combine(row[iw], p[iw]) }
            }
            let out = output + oh * g.outWidth
            if pairs {
                // 2-wide windows at stride 2: even and odd lanes of 32 consecutive floats.
                var ow = 0
                while ow < g.outWidth {
                    let v = UnsafeRawPointer(row + 2 * ow).loadUnaligned(as: SIMD32<Float>.self)
                    let r = R.combine(v.evenHalf, v.oddHalf) * scale
                    // A whole vector where it ends inside this plane's output (an overrun into the
                    // next rows is rewritten by them); lane by lane at the plane's end.
                    if (g.outHeight - oh) * g.outWidth - ow >= 16 {
                        UnsafeMutableRawPointer(out + ow).storeBytes(of: r, as: SIMD16<Float>.self)
                    } else {
                        for t in 0..<(g.outWidth - ow) { out[ow + t] = r[t] }
                    }
                    ow += 16
                }
                continue
            }
            for ow in 0..<g.outWidth {
                let first = ow * g.strideW
                var v = row[first]
                for kw in 1..<max(1, g.kernelWidth) { v = R.combine(v, row[first + kw * g.dilationW]) }
                out[ow] = v * scale
            }
        }
    }
}

protocol SmallReduce {
    static func combine(_ a: Float, _ b: Float) -> Float
    static func combine(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float>
}

enum MaxOf: SmallReduce {
    @inline(__always) static func combine(_ a: Float, _ b: Float) -> Float { b > a ? b : a }
    @inline(__always) static func combine(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float> { simdMax(a, b) }
}

enum SumOf: SmallReduce {
    @inline(__always) static func combine(_ a: Float, _ b: Float) -> Float { a + b }
    @inline(__always) static func combine(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float> { a + b }
}
