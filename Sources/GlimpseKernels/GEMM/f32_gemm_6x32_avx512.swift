/// Register tile of the main GEMM kernel: 6 rows (broadcast from packed A) × 32 columns (two
/// 16-float vectors of packed B), 12 zmm accumulators.
public enum GemmTile {
    public static let mr = 6
    public static let nr = 32
}

/// C[0..<rows, 0..<cols] (+)= A·B over `kc` steps, with A packed as kc × 6 (zero-padded rows) and B
/// packed as kc × 32 (zero-padded columns). `accumulate` adds to C's current contents (for K blocks
/// after the first); `epilogue` (already offset to this tile) is applied on the last K block only.
/// With `split`, tile columns from `split.column` on go to a second destination (the next image
/// when the batch is folded into N), with their own epilogue.
@inline(__always)
public func f32_gemm_6x32_avx512(
    kc: Int, a: UnsafePointer<Float>, b: UnsafePointer<Float>,
    c: UnsafeMutablePointer<Float>, ldc: Int, rows: Int, cols: Int,
    accumulate: Bool, epilogue: GemmEpilogue?, split: GemmColumnSplit? = nil
) {
    var c00 = SIMD16<Float>(), c01 = SIMD16<Float>()
    var c10 = SIMD16<Float>(), c11 = SIMD16<Float>()
    var c20 = SIMD16<Float>(), c21 = SIMD16<Float>()
    var c30 = SIMD16<Float>(), c31 = SIMD16<Float>()
    var c40 = SIMD16<Float>(), c41 = SIMD16<Float>()
    var c50 = SIMD16<Float>(), c51 = SIMD16<Float>()
    var ap = UnsafeRawPointer(a)
    var bp = UnsafeRawPointer(b)
    var k = kc
    // A's float at `offset` bytes from the current step, in every lane.
    @inline(__always) func broadcast(_ offset: Int) -> SIMD16<Float> {
        SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: offset, as: Float.self))
    }
    // 17 columns (a 7×7 plane's 49 end in 17, a 55×55 plane's 3025 too): the first 16 as a half
    // panel, the 17th with one 8-lane FMA per step over the 6 rows of A; 7 FMAs per step, not 12.
    // Even and odd steps go to separate accumulators (the rows' second ones, and `odd`), so 14
    // chains, not 7, hide the FMA latency.
    if cols == 17 {
        var extra = SIMD8<Float>(), odd = SIMD8<Float>()
        // The 8-lane loads of A's 6 rows read 2 floats past them, the next step's; the last step
        // reads its 6 one by one.
        while k > 2 {
            let b0 = bp.loadUnaligned(as: SIMD16<Float>.self)
            let b1 = bp.loadUnaligned(fromByteOffset: 128, as: SIMD16<Float>.self)
            c00.addProduct(broadcast(0), b0); c01.addProduct(broadcast(24), b1)
            c10.addProduct(broadcast(4), b0); c11.addProduct(broadcast(28), b1)
            c20.addProduct(broadcast(8), b0); c21.addProduct(broadcast(32), b1)
            c30.addProduct(broadcast(12), b0); c31.addProduct(broadcast(36), b1)
            c40.addProduct(broadcast(16), b0); c41.addProduct(broadcast(40), b1)
            c50.addProduct(broadcast(20), b0); c51.addProduct(broadcast(44), b1)
            extra.addProduct(ap.loadUnaligned(as: SIMD8<Float>.self),
                             SIMD8<Float>(repeating: bp.loadUnaligned(fromByteOffset: 64, as: Float.self)))
            odd.addProduct(ap.loadUnaligned(fromByteOffset: 24, as: SIMD8<Float>.self),
                           SIMD8<Float>(repeating: bp.loadUnaligned(fromByteOffset: 192, as: Float.self)))
            ap += 48
            bp += 256
            k -= 2
        }
        while k > 0 {
            let b0 = bp.loadUnaligned(as: SIMD16<Float>.self)
            c00.addProduct(broadcast(0), b0)
            c10.addProduct(broadcast(4), b0)
            c20.addProduct(broadcast(8), b0)
            c30.addProduct(broadcast(12), b0)
            c40.addProduct(broadcast(16), b0)
            c50.addProduct(broadcast(20), b0)
            extra.addProduct(k > 1 ? ap.loadUnaligned(as: SIMD8<Float>.self) : GemmTail.sixRows(ap),
                             SIMD8<Float>(repeating: bp.loadUnaligned(fromByteOffset: 64, as: Float.self)))
            ap += 24
            bp += 128
            k -= 1
        }
        c00 += c01; c10 += c11; c20 += c21; c30 += c31; c40 += c41; c50 += c51
        extra += odd
        c01 = SIMD16<Float>(); c11 = SIMD16<Float>(); c21 = SIMD16<Float>()
        c31 = SIMD16<Float>(); c41 = SIMD16<Float>(); c51 = SIMD16<Float>()
        c01[0] = extra[0]; c11[0] = extra[1]; c21[0] = extra[2]
        c31[0] = extra[3]; c41[0] = extra[4]; c51[0] = extra[5]
    }
    // A column tail of at most 16 (a 14×14 plane's 196 columns end in 4, a 13×13 plane's 169 in 9)
    // needs only the panel's first half: half the FMAs. Six chains of dependent FMAs would wait on
    // their latency (a 4-column tail cost 0.75 of a whole panel), so even steps go to the first
    // accumulator of each row and odd steps to the second, summed at the end.
    while cols <= 16 && k > 1 {
        let b0 = bp.loadUnaligned(as: SIMD16<Float>.self)
        let b1 = bp.loadUnaligned(fromByteOffset: 128, as: SIMD16<Float>.self)
        c00.addProduct(broadcast(0), b0)
        c10.addProduct(broadcast(4), b0)
        c20.addProduct(broadcast(8), b0)
        c30.addProduct(broadcast(12), b0)
        c40.addProduct(broadcast(16), b0)
        c50.addProduct(broadcast(20), b0)
        c01.addProduct(broadcast(24), b1)
        c11.addProduct(broadcast(28), b1)
        c21.addProduct(broadcast(32), b1)
        c31.addProduct(broadcast(36), b1)
        c41.addProduct(broadcast(40), b1)
        c51.addProduct(broadcast(44), b1)
        ap += 48
        bp += 256
        k -= 2
    }
    if cols <= 16 {
        c00 += c01; c10 += c11; c20 += c21; c30 += c31; c40 += c41; c50 += c51
        c01 = SIMD16<Float>(); c11 = SIMD16<Float>(); c21 = SIMD16<Float>()
        c31 = SIMD16<Float>(); c41 = SIMD16<Float>(); c51 = SIMD16<Float>()
    }
    while cols <= 16 && k > 0 {
        let b0 = bp.loadUnaligned(as: SIMD16<Float>.self)
        c00.addProduct(broadcast(0), b0)
        c10.addProduct(broadcast(4), b0)
        c20.addProduct(broadcast(8), b0)
        c30.addProduct(broadcast(12), b0)
        c40.addProduct(broadcast(16), b0)
        c50.addProduct(broadcast(20), b0)
        ap += 24
        bp += 128
        k -= 1
    }
    while k > 0 {
        let b0 = bp.loadUnaligned(as: SIMD16<Float>.self)
        let b1 = bp.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
        let a0 = SIMD16<Float>(repeating: ap.loadUnaligned(as: Float.self))
        c00.addProduct(a0, b0); c01.addProduct(a0, b1)
        let a1 = SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 4, as: Float.self))
        c10.addProduct(a1, b0); c11.addProduct(a1, b1)
        let a2 = SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 8, as: Float.self))
        c20.addProduct(a2, b0); c21.addProduct(a2, b1)
        let a3 = SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 12, as: Float.self))
        c30.addProduct(a3, b0); c31.addProduct(a3, b1)
        let a4 = SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 16, as: Float.self))
        c40.addProduct(a4, b0); c41.addProduct(a4, b1)
        let a5 = SIMD16<Float>(repeating: ap.loadUnaligned(fromByteOffset: 20, as: Float.self))
        c50.addProduct(a5, b0); c51.addProduct(a5, b1)
        ap += 24
        bp += 128
        k -= 1
    }
    // A whole tile (6 × 32, one destination) with no epilogue or the common one (row bias, residual,
    // clamp, swish) is finished in registers and stored directly: for the small K of many 1×1 and
    // 3×3 layers a trip through memory costs a third of the tile's FMAs.
    if split == nil && rows == GemmTile.mr && cols == GemmTile.nr && (epilogue?.isRegisterFriendly ?? true) {
        let finish = GemmRegisterFinish<NoRowScaling>(c: c, ldc: ldc, accumulate: accumulate, epilogue: epilogue)
        finish.row(c00, c01, 0)
        finish.row(c10, c11, 1)
        finish.row(c20, c21, 2)
        finish.row(c30, c31, 3)
        finish.row(c40, c41, 4)
        finish.row(c50, c51, 5)
        return
    }
    // Other tiles (row or column tails, a split between two images, scaling epilogues) go through a
    // small stack buffer to one out-of-line store routine, so the general epilogue's code (bias,
    // requantization, residual, clamp, swish) exists once and the k loop above stays a tight, fully
    // inlined FMA loop.
    var tile = GemmAccumulatorTile(c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51)
    withUnsafeBytes(of: &tile) { acc in
        GemmTileStore(c: c, ldc: ldc, rows: rows, cols: split.map { min(cols, $0.column) } ?? cols,
                      accumulate: accumulate, epilogue: epilogue).store(acc.baseAddress!)
        if let split, split.column < cols {
            GemmTileStore(c: split.c, ldc: ldc, rows: rows, cols: cols - split.column, accumulate: accumulate,
                          epilogue: split.epilogue, accColumn: split.column).store(acc.baseAddress!)
        }
    }
}

enum GemmTail {
    /// The 6 floats at `p` in the first lanes of an 8-lane vector, read one by one.
    @inline(__always)
    static func sixRows(_ p: UnsafeRawPointer) -> SIMD8<Float> {
        SIMD8(p.loadUnaligned(as: Float.self), p.loadUnaligned(fromByteOffset: 4, as: Float.self),
              p.loadUnaligned(fromByteOffset: 8, as: Float.self), p.loadUnaligned(fromByteOffset: 12, as: Float.self),
              p.loadUnaligned(fromByteOffset: 16, as: Float.self), p.loadUnaligned(fromByteOffset: 20, as: Float.self), 0, 0)
    }
}

/// What a whole-tile finish does between the bias and the residual: nothing (the micro-kernel's
/// register finish, which must stay small enough for the compiler to inline its loads) or the
/// requantization of a QLinearConv (per-row scale, rounding half to even; `GemmTileStore`).
protocol GemmRowScaling {
    init(_ epilogue: GemmEpilogue?)
    func apply(_ a: inout SIMD16<Float>, _ b: inout SIMD16<Float>, row: Int)
}

struct NoRowScaling: GemmRowScaling {
    @inline(__always) init(_ epilogue: GemmEpilogue?) {}
    @inline(__always) func apply(_ a: inout SIMD16<Float>, _ b: inout SIMD16<Float>, row: Int) {}
}

struct RowRequantization: GemmRowScaling {
    let scale: UnsafePointer<Float>?
    let roundToInteger: Bool

    @inline(__always)
    init(_ epilogue: GemmEpilogue?) {
        scale = epilogue?.rowScale
        roundToInteger = epilogue?.roundToInteger ?? false
    }

    @inline(__always)
    func apply(_ a: inout SIMD16<Float>, _ b: inout SIMD16<Float>, row: Int) {
        if let scale {
            let v = SIMD16<Float>(repeating: scale[row])
            a *= v
            b *= v
        }
        if roundToInteger {
            a.round(.toNearestOrEven)
            b.round(.toNearestOrEven)
        }
    }
}

/// Finishes rows of a whole tile: bias, `Scaling`, residual, clamp, swish, store.
struct GemmRegisterFinish<Scaling: GemmRowScaling> {
    let c: UnsafeMutablePointer<Float>
    let ldc: Int
    let accumulate: Bool
    let bias: UnsafePointer<Float>?
    let residual: UnsafePointer<Float>?
    let residualStride: Int
    let clamp: Bool
    let swish: Bool
    let lower: SIMD16<Float>
    let upper: SIMD16<Float>
    let scaling: Scaling

    @inline(__always)
    init(c: UnsafeMutablePointer<Float>, ldc: Int, accumulate: Bool, epilogue: GemmEpilogue?) {
        scaling = Scaling(epilogue)
        self.c = c
        self.ldc = ldc
        self.accumulate = accumulate
        bias = epilogue?.rowBias
        residual = epilogue?.residual
        residualStride = epilogue?.residualStride ?? 0
        clamp = epilogue != nil
        swish = epilogue?.swish ?? false
        lower = SIMD16(repeating: epilogue?.lowerBound ?? 0)
        upper = SIMD16(repeating: epilogue?.upperBound ?? 0)
    }

    @_transparent
    func row(_ v0: SIMD16<Float>, _ v1: SIMD16<Float>, _ r: Int) {
        let dst = UnsafeMutableRawPointer(c + r &* ldc)
        var a = v0, b = v1
        if accumulate {
            a += dst.loadUnaligned(as: SIMD16<Float>.self)
            b += dst.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
        }
        if let bias {
            let rb = SIMD16<Float>(repeating: bias[r])
            a += rb
            b += rb
        }
        scaling.apply(&a, &b, row: r)
        if let residual {
            let src = UnsafeRawPointer(residual + r &* residualStride)
            a += src.loadUnaligned(as: SIMD16<Float>.self)
            b += src.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
        }
        if clamp {
            a = simdClamp(a, lower, upper)
            b = simdClamp(b, lower, upper)
        }
        if swish {
            a *= simdSigmoid(a)
            b *= simdSigmoid(b)
        }
        dst.storeBytes(of: a, as: SIMD16<Float>.self)
        dst.storeBytes(of: b, toByteOffset: 64, as: SIMD16<Float>.self)
    }
}

/// Where the columns of a register tile from `column` on are stored instead (see `f32_gemm_6x32_avx512`).
public struct GemmColumnSplit {
    public var column: Int
    /// Destination of tile element (row 0, column `column`).
    public var c: UnsafeMutablePointer<Float>
    /// Epilogue offset to that element (nil before the last K block).
    public var epilogue: GemmEpilogue?

    @inline(__always)
    public init(column: Int, c: UnsafeMutablePointer<Float>, epilogue: GemmEpilogue?) {
        self.column = column
        self.c = c
        self.epilogue = epilogue
    }
}

/// The 12 accumulators of a 6×32 tile, row-major (row r = elements 32r..<32r+32).
@usableFromInline
struct GemmAccumulatorTile {
    var v: (SIMD16<Float>, SIMD16<Float>, SIMD16<Float>, SIMD16<Float>, SIMD16<Float>, SIMD16<Float>,
            SIMD16<Float>, SIMD16<Float>, SIMD16<Float>, SIMD16<Float>, SIMD16<Float>, SIMD16<Float>)
    /// Slack for the vector loads of a split tile's second part, which start at a column offset.
    var pad = SIMD16<Float>()
    @inline(__always)
    init(_ a: SIMD16<Float>, _ b: SIMD16<Float>, _ c: SIMD16<Float>, _ d: SIMD16<Float>, _ e: SIMD16<Float>, _ f: SIMD16<Float>,
         _ g: SIMD16<Float>, _ h: SIMD16<Float>, _ i: SIMD16<Float>, _ j: SIMD16<Float>, _ k: SIMD16<Float>, _ l: SIMD16<Float>) {
        v = (a, b, c, d, e, f, g, h, i, j, k, l)
    }
}

/// Stores the rows of a finished register tile, handling row/column tails and the epilogue.
@usableFromInline
struct GemmTileStore {
    let c: UnsafeMutablePointer<Float>
    let ldc: Int
    let rows: Int
    let cols: Int
    let accumulate: Bool
    let epilogue: GemmEpilogue?
    /// First accumulator column stored (column 0 of `c`).
    let accColumn: Int

    @inline(__always)
    init(c: UnsafeMutablePointer<Float>, ldc: Int, rows: Int, cols: Int, accumulate: Bool, epilogue: GemmEpilogue?,
         accColumn: Int = 0) {
        self.c = c
        self.ldc = ldc
        self.rows = rows
        self.cols = cols
        self.accumulate = accumulate
        self.epilogue = epilogue
        self.accColumn = accColumn
    }

    /// One loop over the 2·rows half-rows with the epilogue inline: a separate per-half function
    /// would pass each SIMD16 in four xmm registers and cost more than a small-K tile's FMAs.
    @inline(never)
    func store(_ acc: UnsafeRawPointer) {
        if rows == GemmTile.mr && cols == GemmTile.nr && accColumn == 0, let e = epilogue, e.isPerRow {
            wholeTile(acc, e)
            return
        }
        var r = 0
        while r < rows {
            var col = 0
            while col < cols {
                let valid = cols &- col
                if valid <= 0 { break }
                let dst = c + (r &* ldc &+ col)
                var v = acc.loadUnaligned(fromByteOffset: (r &* GemmTile.nr &+ accColumn &+ col) &* 4, as: SIMD16<Float>.self)
                if valid >= 16 {
                    if accumulate { v += UnsafeRawPointer(dst).loadUnaligned(as: SIMD16<Float>.self) }
                    if let e = epilogue { v = e.apply(v, row: r, col: col) }
                    UnsafeMutableRawPointer(dst).storeBytes(of: v, as: SIMD16<Float>.self)
                } else {
                    tail(v, r, col, valid)
                }
                col &+= 16
            }
            r &+= 1
        }
    }

    /// A whole 6 × 32 tile whose epilogue changes each row by per-row values only (a requantizing
    /// one): the register finish, with the requantization, on rows read back from the tile; the
    /// general loop would check every field for every vector.
    @inline(__always)
    func wholeTile(_ acc: UnsafeRawPointer, _ e: GemmEpilogue) {
        let finish = GemmRegisterFinish<RowRequantization>(c: c, ldc: ldc, accumulate: accumulate, epilogue: e)
        for r in 0..<GemmTile.mr {
            finish.row(acc.loadUnaligned(fromByteOffset: r &* (GemmTile.nr &* 4), as: SIMD16<Float>.self),
                       acc.loadUnaligned(fromByteOffset: r &* (GemmTile.nr &* 4) &+ 64, as: SIMD16<Float>.self), r)
        }
    }

    /// Column tail (fewer than 16 valid columns) of accumulator row `v`: the epilogue on the whole
    /// vector, reads and writes of C for the valid columns only.
    @inline(never)
    func tail(_ v: SIMD16<Float>, _ r: Int, _ col: Int, _ valid: Int) {
        let dst = c + (r &* ldc &+ col)
        var v = v
        if accumulate { v += GemmEpilogue.load(dst, lanes: 0..<valid) }
        if let e = epilogue {
            e.store(v, row: r, col: col, lanes: 0..<valid, to: dst)
        } else {
            GemmEpilogue.store(v, lanes: 0..<valid, to: dst)
        }
    }
}
