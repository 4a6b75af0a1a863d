/// u8 × s8 → u8 matrix product with few rows (QLinearMatMul after global pooling: one row per
/// image): `Y[n][j] = requantize(Σ_k (X[n][k] − zx) · W[k][j])`, lanes along the output columns.
/// Weights `[K][N]` are packed once as `[N/16 blocks][K/4][16 columns][4]`; each step broadcasts four
/// inputs of one row and runs `vpdpbusd` on four column blocks (64 columns) at a time.
public struct QS8Gemv: Sendable {
    public let k: Int
    public let n: Int
    public init(k: Int, n: Int) { self.k = k; self.n = n }

    public var groups: Int { (k + 3) / 4 }
    public var blocks: Int { (n + 15) / 16 }
    /// Bytes of packed weights.
    public var packedCount: Int { blocks * groups * 64 }
    /// Bytes of the zero-padded input row (scratch).
    public var rowBytes: Int { groups * 4 }

    public func pack(_ w: UnsafePointer<Int8>, into dst: UnsafeMutablePointer<Int8>) {
        for b in 0..<blocks {
            for g in 0..<groups {
                for j in 0..<16 {
                    for i in 0..<4 {
                        let kk = 4 * g + i, col = 16 * b + j
                        dst[(b * groups + g) * 64 + j * 4 + i] = kk < k && col < n ? w[kk * n + col] : 0
                    }
                }
            }
        }
    }

    /// Column sums of `W`, for the zero-point correction.
    public func columnSums(_ w: UnsafePointer<Int8>) -> [Int32] {
        (0..<n).map { j in (0..<k).reduce(Int32(0)) { $0 &+ Int32(w[$1 * n + j]) } }
    }

    /// One row, or the column blocks `part` of it (16 columns each; all by default): `x` has `k`
    /// bytes, `padded` is `rowBytes` of scratch; `rq` has one bias (the correction
    /// `−zx·Σ_k W[k][j]`) and one scale per column, padded to a multiple of 16.
    public func runRow(x: UnsafePointer<UInt8>, packed: UnsafePointer<Int8>, requant rq: RequantPointers,
                       y: UnsafeMutablePointer<UInt8>, padded: UnsafeMutablePointer<UInt8>, blocks part: Range<Int>? = nil) {
        padded.update(from: x, count: k)
        for i in k..<rowBytes { padded[i] = 0 }
        let xr = UnsafeRawPointer(padded)
        let end = min(part?.upperBound ?? blocks, blocks)
        var b = max(part?.lowerBound ?? 0, 0)
        while b < end {
            let count = min(4, end - b)
            var a0 = SIMD16<Int32>(), a1 = SIMD16<Int32>(), a2 = SIMD16<Int32>(), a3 = SIMD16<Int32>()
            let base = UnsafeRawPointer(packed + b * groups * 64)
            let stride = groups * 64
            if count == 4 {
                for g in 0..<groups {
                    let u = SIMD16<Int32>(repeating: xr.load(fromByteOffset: 4 * g, as: Int32.self))
                    a0 = dpbusd(a0, u, base.load(fromByteOffset: g * 64, as: SIMD16<Int32>.self))
                    a1 = dpbusd(a1, u, base.load(fromByteOffset: stride + g * 64, as: SIMD16<Int32>.self))
                    a2 = dpbusd(a2, u, base.load(fromByteOffset: 2 * stride + g * 64, as: SIMD16<Int32>.self))
                    a3 = dpbusd(a3, u, base.load(fromByteOffset: 3 * stride + g * 64, as: SIMD16<Int32>.self))
                }
            } else {
                for g in 0..<groups {
                    let u = SIMD16<Int32>(repeating: xr.load(fromByteOffset: 4 * g, as: Int32.self))
                    a0 = dpbusd(a0, u, base.load(fromByteOffset: g * 64, as: SIMD16<Int32>.self))
                    if count > 1 { a1 = dpbusd(a1, u, base.load(fromByteOffset: stride + g * 64, as: SIMD16<Int32>.self)) }
                    if count > 2 { a2 = dpbusd(a2, u, base.load(fromByteOffset: 2 * stride + g * 64, as: SIMD16<Int32>.self)) }
                }
            }
            for i in 0..<count {
                let col = 16 * (b + i)
                let acc = i == 0 ? a0 : i == 1 ? a1 : i == 2 ? a2 : a3
                store(acc, column: col, rq: rq, to: y + col, count: n - col)
            }
            b += count
        }
    }

    @inline(__always)
    func store(_ acc: SIMD16<Int32>, column: Int, rq: RequantPointers, to dst: UnsafeMutablePointer<UInt8>, count: Int) {
        let bias = UnsafeRawPointer(rq.bias + column).loadUnaligned(as: SIMD16<Int32>.self)
        let scale = UnsafeRawPointer(rq.scale + column).loadUnaligned(as: SIMD16<Float>.self)
        let r = simdClampFinite(simdFloat(acc &+ bias) * scale, SIMD16<Float>(repeating: rq.lower), SIMD16<Float>(repeating: rq.upper))
        RequantPointers.store(simdNarrowU8(simdRoundToInt32(r) &+ rq.zeroPoint), to: dst, count: count)
    }
}
