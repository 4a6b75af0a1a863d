/// What a GEMM kernel does to each accumulator before storing it (XNNPACK-style fused epilogue).
///
/// Order: `v = acc + rowBias[m] + colBias[n]`, then `v *= rowScale[m]·colScale[n]` and rounding to the nearest
/// integer (ties to even) for requantization, then `v += residual[m, n]`, then clamp to
/// `[lowerBound, upperBound]` (ReLU is `[0, +inf]`, ReLU6 `[0, 6]`), then `v *= sigmoid(v)` when
/// `swish` is set (SiLU).
/// Pointers are indexed from the tile's first row/column (see `offset(row:col:)`).
public struct GemmEpilogue {
    public var rowBias: UnsafePointer<Float>?
    public var colBias: UnsafePointer<Float>?
    public var rowScale: UnsafePointer<Float>?
    public var colScale: UnsafePointer<Float>?
    public var roundToInteger: Bool
    public var residual: UnsafePointer<Float>?
    public var residualStride: Int
    public var lowerBound: Float
    public var upperBound: Float
    public var swish: Bool

    public init(rowBias: UnsafePointer<Float>? = nil, colBias: UnsafePointer<Float>? = nil,
                rowScale: UnsafePointer<Float>? = nil, colScale: UnsafePointer<Float>? = nil, roundToInteger: Bool = false,
                residual: UnsafePointer<Float>? = nil, residualStride: Int = 0,
                lowerBound: Float = -.infinity, upperBound: Float = .infinity, swish: Bool = false) {
        self.rowBias = rowBias
        self.colBias = colBias
        self.rowScale = rowScale
        self.colScale = colScale
        self.roundToInteger = roundToInteger
        self.residual = residual
        self.residualStride = residualStride
        self.lowerBound = lowerBound
        self.upperBound = upperBound
        self.swish = swish
    }

    public static let none = GemmEpilogue()

    /// True when the epilogue is at most a row bias, a residual, a clamp and swish: what a whole tile
    /// can apply in registers (`GemmRegisterFinish`).
    @inlinable
    public var isRegisterFriendly: Bool {
        colBias == nil && rowScale == nil && colScale == nil && !roundToInteger
    }

    /// True when the epilogue changes each row by per-row values only (bias, requantization scale and
    /// rounding, residual, clamp, swish).
    @inlinable
    public var isPerRow: Bool { colBias == nil && colScale == nil }

    /// The epilogue as seen by the tile whose top-left element is (row, col).
    @inlinable
    public func offset(row: Int, col: Int) -> GemmEpilogue {
        var e = self
        e.rowBias = rowBias.map { $0 + row }
        e.colBias = colBias.map { $0 + col }
        e.rowScale = rowScale.map { $0 + row }
        e.colScale = colScale.map { $0 + col }
        e.residual = residual.map { $0 + row * residualStride + col }
        return e
    }

    /// The epilogue of another image of a folded batch: the residual moved by `floats`.
    @inlinable
    public func shiftingResidual(by floats: Int) -> GemmEpilogue {
        var e = self
        e.residual = residual.map { $0 + floats }
        return e
    }

    /// Applies the epilogue to 16 consecutive columns `col..<col+16` of row `row`.
    @_transparent
    public func apply(_ acc: SIMD16<Float>, row: Int, col: Int) -> SIMD16<Float> {
        apply(acc, row: row, col: col) { UnsafeRawPointer($0).loadUnaligned(as: SIMD16<Float>.self) }
    }

    /// `apply` on the lanes `lanes` only (columns `col + lanes`): what it reads per column (column
    /// bias and scale, residual) is read for those lanes alone, so nothing outside them is touched;
    /// the other lanes of the result are meaningless.
    @inline(__always)
    public func apply(_ acc: SIMD16<Float>, row: Int, col: Int, lanes: Range<Int>) -> SIMD16<Float> {
        apply(acc, row: row, col: col) { Self.load($0, lanes: lanes) }
    }

    /// The epilogue with the 16 columns' per-column values read by `columns`.
    @usableFromInline @inline(__always)
    func apply(_ acc: SIMD16<Float>, row: Int, col: Int, columns: (UnsafePointer<Float>) -> SIMD16<Float>) -> SIMD16<Float> {
        var v = acc
        if let rb = rowBias { v += SIMD16(repeating: rb[row]) }
        if let cb = colBias { v += columns(cb + col) }
        if let rs = rowScale {
            v *= SIMD16(repeating: rs[row])
        }
        if let cs = colScale { v *= columns(cs + col) }
        if roundToInteger { v.round(.toNearestOrEven) }
        if let r = residual { v += columns(r + row * residualStride + col) }
        v = simdClamp(v, SIMD16(repeating: lowerBound), SIMD16(repeating: upperBound))
        if swish { v *= simdSigmoid(v) }
        return v
    }

    /// The floats `p[lanes]` in those lanes of a vector (a range within 0..<16), the rest zero.
    @inline(__always)
    public static func load(_ p: UnsafePointer<Float>, lanes: Range<Int>) -> SIMD16<Float> {
        var v = SIMD16<Float>()
        for t in lanes { v[t] = p[t] }
        return v
    }

    /// Writes lanes `lanes` (a range within 0..<16) of `v` to `dst[lanes]`, and nothing else.
    @inline(__always)
    public static func store(_ v: SIMD16<Float>, lanes: Range<Int>, to dst: UnsafeMutablePointer<Float>) {
        for t in lanes { dst[t] = v[t] }
    }

    /// Stores 16 consecutive columns `col..<col+16` of row `row` through the epilogue at `dst`
    /// (where that row's element `col` goes); only the first `lanes` when fewer remain (the epilogue
    /// still in vector form), so nothing past them is read or written.
    @inline(__always)
    public func store(_ acc: SIMD16<Float>, row: Int, col: Int, lanes: Int, to dst: UnsafeMutablePointer<Float>) {
        if lanes == 16 {
            UnsafeMutableRawPointer(dst).storeBytes(of: apply(acc, row: row, col: col), as: SIMD16<Float>.self)
        } else {
            store(acc, row: row, col: col, lanes: 0..<lanes, to: dst)
        }
    }

    /// Stores lanes `lanes` of 16 consecutive columns `col..<col+16` of row `row` through the
    /// epilogue at `dst` (where element `col` goes): the epilogue in vector form, reading and writing
    /// those lanes' columns only.
    @inline(__always)
    public func store(_ acc: SIMD16<Float>, row: Int, col: Int, lanes: Range<Int>, to dst: UnsafeMutablePointer<Float>) {
        Self.store(apply(acc, row: row, col: col, lanes: lanes), lanes: lanes, to: dst)
    }

    /// Scalar form of `apply` for one element.
    @inline(__always)
    public func apply(_ acc: Float, row: Int, col: Int) -> Float {
        var v = acc
        if let rb = rowBias { v += rb[row] }
        if let cb = colBias { v += cb[col] }
        if let rs = rowScale { v *= rs[row] }
        if let cs = colScale { v *= cs[col] }
        if roundToInteger { v.round(.toNearestOrEven) }
        if let r = residual { v += r[row * residualStride + col] }
        v = Swift.min(Swift.max(v, lowerBound), upperBound)
        if swish { v *= simdSigmoid(SIMD16(repeating: v))[0] }
        return v
    }
}
