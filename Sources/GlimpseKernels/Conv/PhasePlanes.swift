/// One input plane of a sliding-window operation (depthwise convolution, pooling), padded and split
/// into stride phases so that the whole output plane is a 1-D sweep of contiguous vector loads.
///
/// The padded plane (Hp × Wp, padding included) is split into sH·sW phase planes:
/// `phase(a, b)[y][x] = padded[y·sH + a][x·sW + b]`, each with `rows` (Hq) rows of `rowStride`
/// (Wq) floats and no per-row rounding. Window tap (kh, kw) of output (y, x) is then
/// `phase(kh·dH % sH, kw·dW % sW)[y + kh·dH / sH][x + kw·dW / sW]`, so with the output laid out
/// "flat" at index `o = y·Wq + x`, every tap is the load at `o + tapOffset`. Columns x ≥ Wo of the
/// flat output are junk and are dropped when the output is compacted. Narrow planes (7×7, 14×14)
/// therefore fill whole vectors instead of one partly used vector per row.
public struct PhasePlanes {
    public let geometry: ConvGeometry
    /// Wq: floats per phase row.
    public let rowStride: Int
    /// Hq: rows per phase.
    public let rows: Int
    /// Floats per phase buffer, with slack for the over-reads of junk lanes and for row copies.
    public let phaseSize: Int
    /// Floats of the flat output (Ho·Wq rounded up to whole 4-vector chunks).
    public let flatCount: Int

    public init(_ g: ConvGeometry) {
        geometry = g
        let hp = (g.outHeight - 1) * g.strideH + (g.kernelHeight - 1) * g.dilationH + 1
        let wp = (g.outWidth - 1) * g.strideW + (g.kernelWidth - 1) * g.dilationW + 1
        rows = (hp - 1) / g.strideH + 1
        rowStride = (wp - 1) / g.strideW + 1
        // Reads reach o + offset + 15 with o < flatCount ≤ Ho·Wq + 63: at most rows·Wq + Wq + 77.
        phaseSize = (rows * rowStride + rowStride + 80 + 15) / 16 * 16
        flatCount = (g.outHeight * rowStride + 63) / 64 * 64
    }

    public var phaseCount: Int { geometry.strideH * geometry.strideW }

    /// Floats of scratch: the flat output first (64-byte aligned when the scratch is), then the phases.
    public var scratchCount: Int { flatCount + phaseCount * phaseSize }

    /// Offsets of each window tap (row-major over kh, kw) from the phase area's start.
    @inline(__always)
    public func tapOffsets(_ offsets: UnsafeMutablePointer<Int>) {
        let g = geometry
        var t = 0
        for kh in 0..<g.kernelHeight {
            let r = kh * g.dilationH
            for kw in 0..<g.kernelWidth {
                let c = kw * g.dilationW
                let phase = (r % g.strideH) * g.strideW + c % g.strideW
                offsets[t] = phase * phaseSize + (r / g.strideH) * rowStride + c / g.strideW
                t += 1
            }
        }
    }

    /// Writes the padded, phase-split copy of `input` (one H×W plane) at `phases`: all of it, or
    /// only phase rows `range` of every phase. Stores may run past a row into the next ones (narrow
    /// rows: several), which are written after it; unless the range ends at the phase's last row,
    /// no store runs past the range's end, so threads filling adjacent ranges never write each
    /// other's rows.
    @inline(__always)
    public func fill(input: UnsafePointer<Float>, padValue: Float, phases: UnsafeMutablePointer<Float>, rows range: Range<Int>? = nil) {
        let g = geometry
        let range = range ?? 0..<rows
        // Floats writable from row y's start: up to the range's end, or anything (the slack).
        @inline(__always) func limit(_ y: Int) -> Int { range.upperBound < rows ? (range.upperBound &- y) &* rowStride : .max }
        for a in 0..<g.strideH {
            if g.strideW == 2 {
                for y in range { fillStride2Row(input, padValue, phases, a: a, y: y, limit: limit(y)) }
                continue
            }
            for b in 0..<g.strideW {
                let base = phases + (a &* g.strideW &+ b) &* phaseSize
                // Phase columns whose input column x·sW + b − padLeft lies in [0, W).
                let x0 = min(rowStride, max(0, (g.padLeft - b + g.strideW - 1) / g.strideW))
                let x1 = max(x0, min(rowStride, (g.inWidth + g.padLeft - b + g.strideW - 1) / g.strideW))
                for y in range {
                    let dst = base + y &* rowStride
                    let writable = limit(y)
                    let ih = y &* g.strideH &+ a &- g.padTop
                    if ih < 0 || ih >= g.inHeight || x1 == x0 {
                        fillRow(dst, padValue, limit: writable)
                        continue
                    }
                    let src = input + (ih &* g.inWidth &+ x0 &* g.strideW &+ b &- g.padLeft)
                    if g.strideW == 1 {
                        copyRow(dst + x0, src, x1 &- x0, planeEnd: input + g.inPixels, limit: writable &- x0)
                    } else {
                        var i = 0
                        while i < x1 &- x0 {
                            dst[x0 &+ i] = src[i &* g.strideW]
                            i &+= 1
                        }
                    }
                    padEdges(dst, padValue, x0, x1)
                }
            }
        }
    }

    /// Row y of phases (a, 0) and (a, 1) for stride 2: one pass over the input row, even and odd
    /// columns split with SIMD shuffles. Whole-vector stores end within `limit` floats of the row's start.
    @inline(__always)
    func fillStride2Row(_ input: UnsafePointer<Float>, _ padValue: Float, _ phases: UnsafeMutablePointer<Float>, a: Int, y: Int,
                        limit: Int) {
        let g = geometry
        let row0 = phases + ((a &* 2) &* phaseSize &+ y &* rowStride)
        let row1 = row0 + phaseSize
        let ih = y &* g.strideH &+ a &- g.padTop
        if ih < 0 || ih >= g.inHeight {
            fillRow(row0, padValue, limit: limit)
            fillRow(row1, padValue, limit: limit)
            return
        }
        // Input column 2j lands in phase padLeft % 2 at x = j + padLeft / 2; 2j + 1 in the other at j + (padLeft + 1) / 2.
        let evenRow = g.padLeft % 2 == 0 ? row0 : row1, oddRow = g.padLeft % 2 == 0 ? row1 : row0
        let xe = min(rowStride, g.padLeft / 2), xo = min(rowStride, (g.padLeft + 1) / 2)
        let ne = min((g.inWidth + 1) / 2, rowStride - xe), no = min(g.inWidth / 2, rowStride - xo)
        let src = input + ih &* g.inWidth
        let planeEnd = input + g.inPixels
        // Whole vectors while the source stays inside the plane; lanes past ne / no land in the
        // padding (rewritten below) or in later rows (rewritten when those are filled).
        var j = 0
        let stores = min(limit &- max(xe, xo), Int.max &- 16)
        while j < ne && src + (2 &* j &+ 32) <= planeEnd && j &+ 16 <= stores {
            let p = UnsafeRawPointer(src + (2 &* j))
            let v0 = p.loadUnaligned(as: SIMD16<Float>.self), v1 = p.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
            UnsafeMutableRawPointer(evenRow + (xe &+ j)).storeBytes(of: SIMD16(lowHalf: v0.evenHalf, highHalf: v1.evenHalf), as: SIMD16<Float>.self)
            UnsafeMutableRawPointer(oddRow + (xo &+ j)).storeBytes(of: SIMD16(lowHalf: v0.oddHalf, highHalf: v1.oddHalf), as: SIMD16<Float>.self)
            j &+= 16
        }
        var k = min(j, ne)
        while k < ne {
            evenRow[xe &+ k] = src[2 &* k]
            k &+= 1
        }
        k = min(j, no)
        while k < no {
            oddRow[xo &+ k] = src[2 &* k &+ 1]
            k &+= 1
        }
        padEdges(evenRow, padValue, xe, xe &+ ne)
        padEdges(oddRow, padValue, xo, xo &+ no)
    }

    /// A whole row of padding, in whole vectors (the overrun lands in later rows or the slack)
    /// while they end within `limit` floats, then float by float.
    @inline(__always)
    func fillRow(_ dst: UnsafeMutablePointer<Float>, _ padValue: Float, limit: Int) {
        let pad = SIMD16<Float>(repeating: padValue)
        var i = 0
        while i < rowStride && i <= limit &- 16 {
            UnsafeMutableRawPointer(dst + i).storeBytes(of: pad, as: SIMD16<Float>.self)
            i &+= 16
        }
        while i < rowStride {
            dst[i] = padValue
            i &+= 1
        }
    }

    /// `count` floats, in whole vectors while the source stays inside the plane and the store
    /// within `limit` floats of `dst`; the overrun past the row is rewritten by `padEdges` and by
    /// later rows.
    @inline(__always)
    func copyRow(_ dst: UnsafeMutablePointer<Float>, _ src: UnsafePointer<Float>, _ count: Int, planeEnd: UnsafePointer<Float>,
                 limit: Int) {
        var i = 0
        while i < count && src + (i &+ 16) <= planeEnd && i <= limit &- 16 {
            UnsafeMutableRawPointer(dst + i).storeBytes(
                of: UnsafeRawPointer(src + i).loadUnaligned(as: SIMD16<Float>.self), as: SIMD16<Float>.self)
            i &+= 16
        }
        if i < count && count >= 16 {
            // The plane's end: one vector ending exactly at the last float, overlapping the previous.
            let last = count &- 16
            UnsafeMutableRawPointer(dst + last).storeBytes(
                of: UnsafeRawPointer(src + last).loadUnaligned(as: SIMD16<Float>.self), as: SIMD16<Float>.self)
            return
        }
        while i < count {
            dst[i] = src[i]
            i &+= 1
        }
    }

    /// Padding left of column x0 and from x1 to the end of the row.
    @inline(__always)
    func padEdges(_ dst: UnsafeMutablePointer<Float>, _ padValue: Float, _ x0: Int, _ x1: Int) {
        var x = 0
        while x < x0 {
            dst[x] = padValue
            x &+= 1
        }
        x = x1
        while x < rowStride {
            dst[x] = padValue
            x &+= 1
        }
    }

    /// Copies the valid columns of the flat output into a dense Ho×Wo buffer with at least 16
    /// floats of slack, in whole vectors (each row's overrun is rewritten by the next row).
    @inline(__always)
    public func compactDense(_ flat: UnsafePointer<Float>, into dense: UnsafeMutablePointer<Float>) {
        let g = geometry
        let ow = g.outWidth
        for y in 0..<g.outHeight {
            let src = UnsafeRawPointer(flat + y &* rowStride)
            let dst = UnsafeMutableRawPointer(dense + y &* ow)
            var x = 0
            while x < ow {
                dst.storeBytes(of: src.loadUnaligned(fromByteOffset: x &* 4, as: SIMD16<Float>.self), toByteOffset: x &* 4, as: SIMD16<Float>.self)
                x &+= 16
            }
        }
    }

    /// Copies the valid columns of the flat output into the dense Ho×Wo plane, through `store`
    /// (which applies the epilogue). Vectors that run past a row spill into the next row, which is
    /// stored after it; only the plane's last vectors are stored partially.
    @inline(__always)
    public func compact<S: PlaneStore>(_ flat: UnsafePointer<Float>, _ store: S) {
        let g = geometry
        let ow = g.outWidth, total = g.outPixels
        for y in 0..<g.outHeight {
            let row = flat + y * rowStride
            var x = 0
            while x < ow {
                let v = UnsafeRawPointer(row + x).loadUnaligned(as: SIMD16<Float>.self)
                let pixel = y * ow + x
                if pixel + 16 <= total {
                    store.full(v, y: y, x: x, pixel: pixel)
                } else {
                    store.partial(v, y: y, x: x, pixel: pixel, valid: min(16, total - pixel))
                }
                x += 16
            }
        }
    }
}

/// Writes one output vector of a plane: `full` stores 16 floats at `pixel`, `partial` the first `valid`.
public protocol PlaneStore {
    func full(_ v: SIMD16<Float>, y: Int, x: Int, pixel: Int)
    func partial(_ v: SIMD16<Float>, y: Int, x: Int, pixel: Int, valid: Int)
}

/// How a window reduces its taps: a weighted sum (depthwise convolution), a max or a sum (pooling).
public protocol WindowReduce {
    func start() -> SIMD16<Float>
    func combine(_ acc: inout SIMD16<Float>, tap: Int, _ v: SIMD16<Float>)
}

extension PhasePlanes {
    /// The flat sweep: `flat[o] = reduce over taps t of phases[o + offsets[t]]`, four vectors at a time.
    @inline(__always)
    public func sweep<R: WindowReduce>(_ reduce: R, phases: UnsafePointer<Float>, offsets: UnsafePointer<Int>,
                                       taps: Int, flat: UnsafeMutablePointer<Float>) {
        let count = geometry.outHeight * rowStride
        var o = 0
        while o < count {
            let p = UnsafeRawPointer(phases + o)
            var a0 = reduce.start(), a1 = a0, a2 = a0, a3 = a0
            for t in 0..<taps {
                let r = p + offsets[t] * 4
                reduce.combine(&a0, tap: t, r.loadUnaligned(as: SIMD16<Float>.self))
                reduce.combine(&a1, tap: t, r.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self))
                reduce.combine(&a2, tap: t, r.loadUnaligned(fromByteOffset: 128, as: SIMD16<Float>.self))
                reduce.combine(&a3, tap: t, r.loadUnaligned(fromByteOffset: 192, as: SIMD16<Float>.self))
            }
            let d = UnsafeMutableRawPointer(flat + o)
            d.storeBytes(of: a0, as: SIMD16<Float>.self)
            d.storeBytes(of: a1, toByteOffset: 64, as: SIMD16<Float>.self)
            d.storeBytes(of: a2, toByteOffset: 128, as: SIMD16<Float>.self)
            d.storeBytes(of: a3, toByteOffset: 192, as: SIMD16<Float>.self)
            o += 64
        }
    }

    /// Row by row for wide planes: output row y is swept directly from the phases and stored through
    /// `store` (no flat or dense staging), four vectors at a time while they fit in the row.
    @inline(__always)
    public func sweepRows<R: WindowReduce, S: PlaneStore>(_ reduce: R, phases: UnsafePointer<Float>, offsets: UnsafePointer<Int>,
                                                         taps: Int, store: S) {
        let g = geometry
        let ow = g.outWidth, total = g.outPixels
        for y in 0..<g.outHeight {
            let row = phases + y &* rowStride
            let rowPixel = y &* ow
            var x = 0
            // Four vectors at a time while they stay inside the plane: the last chunk of a row may
            // spill into the next row, which is computed and stored after it.
            while x < ow && rowPixel &+ x &+ 64 <= total {
                let p = UnsafeRawPointer(row + x)
                var a0 = reduce.start(), a1 = a0, a2 = a0, a3 = a0
                for t in 0..<taps {
                    let r = p + offsets[t] &* 4
                    reduce.combine(&a0, tap: t, r.loadUnaligned(as: SIMD16<Float>.self))
                    reduce.combine(&a1, tap: t, r.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self))
                    reduce.combine(&a2, tap: t, r.loadUnaligned(fromByteOffset: 128, as: SIMD16<Float>.self))
                    reduce.combine(&a3, tap: t, r.loadUnaligned(fromByteOffset: 192, as: SIMD16<Float>.self))
                }
                store.full(a0, y: y, x: x, pixel: rowPixel &+ x)
                store.full(a1, y: y, x: x &+ 16, pixel: rowPixel &+ x &+ 16)
                store.full(a2, y: y, x: x &+ 32, pixel: rowPixel &+ x &+ 32)
                store.full(a3, y: y, x: x &+ 48, pixel: rowPixel &+ x &+ 48)
                x &+= 64
            }
            while x < ow {
                let p = UnsafeRawPointer(row + x)
                var a0 = reduce.start()
                for t in 0..<taps { reduce.combine(&a0, tap: t, (p + offsets[t] &* 4).loadUnaligned(as: SIMD16<Float>.self)) }
                let pixel = rowPixel &+ x
                if pixel &+ 16 <= total {
                    store.full(a0, y: y, x: x, pixel: pixel)  // may spill into the next row, stored after
                } else {
                    store.partial(a0, y: y, x: x, pixel: pixel, valid: total &- pixel)
                }
                x &+= 16
            }
        }
    }

    /// Planes at least this wide are swept row by row; narrower ones flat (see the type's comment).
    public static let rowSweepMinWidth = 32
}
