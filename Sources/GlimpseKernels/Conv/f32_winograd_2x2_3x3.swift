/// Winograd F(2×2, 3×3) for 3×3 convolutions at stride 1 with one pixel of padding: each 2×2 block
/// of outputs ("tile") comes from a 4×4 patch of input through 16 products per input and output
/// channel instead of 36. With U = G·g·Gᵀ (weights, at load), V = Bᵀ·d·B (input patches) and
/// Y = Aᵀ·M·A (outputs), the products are 16 GEMMs, one per position ξ = 4i + j of the 4×4
/// transforms: M_ξ [Cout × tiles] = U_ξ [Cout × Cin] · V_ξ [Cin × tiles].
///
///     G = [1 0 0; ½ ½ ½; ½ −½ ½; 0 0 1]   Bᵀ = [1 0 −1 0; 0 1 1 0; 0 −1 1 0; 0 1 0 −1]   Aᵀ = [1 1 1 0; 0 1 −1 −1]
///
/// The transforms run 16 tiles of a tile row at a time, one per vector lane.
public enum f32_winograd_2x2_3x3 {
    public static let positions = 16

    /// Whether a convolution runs this way: 3×3, stride 1, one pixel of padding, no dilation,
    /// even output planes (whole tiles), and enough input channels for 16 GEMMs of that depth to
    /// run near the 6×32 kernel's speed.
    public static func applies(_ g: ConvGeometry) -> Bool {
        g.kernelHeight == 3 && g.kernelWidth == 3 && g.strideH == 1 && g.strideW == 1 && g.dilationH == 1 && g.dilationW == 1
            && g.padTop == 1 && g.padLeft == 1 && g.outHeight == g.inHeight && g.outWidth == g.inWidth
            && g.outHeight % 2 == 0 && g.outWidth % 2 == 0 && g.inChannels >= minChannels
    }

    /// Fewest input channels (the GEMMs' reduction) for which `applies`.
    public static let minChannels = 64

    /// The weights' 16 transforms, each packed for the GEMM (`GemmPacking.packA`), position by position.
    public static func packedWeightCount(cout: Int, cin: Int) -> Int {
        positions * GemmPacking.packedACount(m: cout, k: cin)
    }

    /// Transforms weights [Cout, Cin, 3, 3] and packs them (`packedWeightCount` floats at `packed`).
    public static func packWeights(_ w: UnsafePointer<Float>, cout: Int, cin: Int, into packed: UnsafeMutablePointer<Float>) {
        let u = UnsafeMutablePointer<Float>.allocate(capacity: positions * cout * cin)
        defer { u.deallocate() }
        for co in 0..<cout {
            for ci in 0..<cin {
                let g = w + (co * cin + ci) * 9
                // Row i of G·g (a 4×3 matrix), then that row times Gᵀ: u[i][0...3].
                for i in 0..<4 {
                    @inline(__always) func gRow(_ c: Int) -> Float {
                        let g0 = g[c], g1 = g[3 + c], g2 = g[6 + c]
                        switch i {
                        case 0: return g0
                        case 1: return (g0 + g1 + g2) / 2
                        case 2: return (g0 - g1 + g2) / 2
                        default: return g2
                        }
                    }
                    let r0 = gRow(0), r1 = gRow(1), r2 = gRow(2)
                    let out = u + (4 * i * cout + co) * cin + ci, step = cout * cin
                    out[0] = r0
                    out[step] = (r0 + r1 + r2) / 2
                    out[2 * step] = (r0 - r1 + r2) / 2
                    out[3 * step] = r2
                }
            }
        }
        let each = GemmPacking.packedACount(m: cout, k: cin)
        for xi in 0..<positions {
            GemmPacking.packA(u + xi * cout * cin, m: cout, k: cin, rowStride: cin, colStride: 1, into: packed + xi * each)
        }
    }

    /// Tiles of an H × W output (both even) and the padded input plane the input transform reads.
    public struct Tiles: Sendable {
        public let rows: Int
        public let columns: Int
        public init(height: Int, width: Int) {
            rows = height / 2
            columns = width / 2
        }
        public var count: Int { rows * columns }
        /// Floats between rows of the padded plane: the plane's width, both paddings, and room for
        /// the last vector block's loads.
        public var paddedWidth: Int { 2 * columns + 2 + 48 }
        public var paddedRows: Int { 2 * rows + 2 }
        public var paddedCount: Int { paddedRows * paddedWidth }

        /// Tile rows per band: V and M of a band, for `cin` and `cout` channels, take about
        /// `bandBytes`, so they stay in L2 between the transforms and the GEMMs.
        public func bandRows(cin: Int, cout: Int) -> Int {
            let perRow = positions * (cin + cout) * columns * 4
            return max(1, min(rows, bandBytes / max(1, perRow)))
        }

        /// Floats between rows of V and M (one per channel) for bands of `bandRows` tile rows: the
        /// tiles and room for a last block's whole-vector stores and loads.
        public func stride(bandRows: Int) -> Int { bandRows * columns + 16 }
    }

    /// About this much of V and M per band.
    public static let bandBytes = 4 << 20

    /// The input plane `x` (H × W) with one pixel of zero padding, at `padded` (`Tiles.paddedCount`).
    public static func pad(_ x: UnsafePointer<Float>, tiles t: Tiles, into padded: UnsafeMutablePointer<Float>) {
        let width = 2 * t.columns, pw = t.paddedWidth
        padded.update(repeating: 0, count: pw)
        for r in 0..<(2 * t.rows) {
            let dst = padded + (r + 1) * pw
            dst[0] = 0
            (dst + 1).update(from: x + r * width, count: width)
            (dst + 1 + width).update(repeating: 0, count: pw - 1 - width)
        }
        (padded + (2 * t.rows + 1) * pw).update(repeating: 0, count: pw)
    }

    /// V = Bᵀ·d·B of the tiles in tile rows `rows` of one input channel's padded plane; position ξ's
    /// values go to `v + ξ·positionStride`, tile by tile from the first of those rows.
    public static func transformInput(_ padded: UnsafePointer<Float>, tiles t: Tiles, rows: Range<Int>,
                                      into v: UnsafeMutablePointer<Float>, positionStride: Int) {
        let pw = t.paddedWidth
        for ty in rows {
            var tx = 0
            while tx < t.columns {
                // Row r of each patch, as d·B (4 vectors, one per column of the transform).
                @inline(__always) func row(_ r: Int) -> (SIMD16<Float>, SIMD16<Float>, SIMD16<Float>, SIMD16<Float>) {
                    let p = UnsafeRawPointer(padded + (2 * ty + r) * pw + 2 * tx)
                    let a = p.loadUnaligned(as: SIMD16<Float>.self), b = p.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
                    let c = p.loadUnaligned(fromByteOffset: 8, as: SIMD16<Float>.self)
                    let d = p.loadUnaligned(fromByteOffset: 72, as: SIMD16<Float>.self)
                    let c0 = f32_pool2d_rows.evenLanes(a, b), c1 = SIMD16(lowHalf: a.oddHalf, highHalf: b.oddHalf)
                    let c2 = f32_pool2d_rows.evenLanes(c, d), c3 = SIMD16(lowHalf: c.oddHalf, highHalf: d.oddHalf)
                    return (c0 - c2, c1 + c2, c2 - c1, c1 - c3)
                }
                let r0 = row(0), r1 = row(1), r2 = row(2), r3 = row(3)
                let out = v + (ty - rows.lowerBound) * t.columns + tx
                @inline(__always) func put(_ i: Int, _ x: (SIMD16<Float>, SIMD16<Float>, SIMD16<Float>, SIMD16<Float>)) {
                    let base = out + 4 * i * positionStride
                    UnsafeMutableRawPointer(base).storeBytes(of: x.0, as: SIMD16<Float>.self)
                    UnsafeMutableRawPointer(base + positionStride).storeBytes(of: x.1, as: SIMD16<Float>.self)
                    UnsafeMutableRawPointer(base + 2 * positionStride).storeBytes(of: x.2, as: SIMD16<Float>.self)
                    UnsafeMutableRawPointer(base + 3 * positionStride).storeBytes(of: x.3, as: SIMD16<Float>.self)
                }
                put(0, (r0.0 - r2.0, r0.1 - r2.1, r0.2 - r2.2, r0.3 - r2.3))
                put(1, (r1.0 + r2.0, r1.1 + r2.1, r1.2 + r2.2, r1.3 + r2.3))
                put(2, (r2.0 - r1.0, r2.1 - r1.1, r2.2 - r1.2, r2.3 - r1.3))
                put(3, (r1.0 - r3.0, r1.1 - r3.1, r1.2 - r3.2, r1.3 - r3.3))
                tx += 16
            }
        }
    }

    /// Y = Aᵀ·M·A of the tiles in tile rows `rows` of one output channel (position ξ's values at
    /// `m + ξ·positionStride`, from the first of those rows), plus `bias`, clamped to `lower...upper`,
    /// into the H × W plane `y`.
    public static func transformOutput(_ m: UnsafePointer<Float>, positionStride: Int, tiles t: Tiles, rows: Range<Int>,
                                       bias: Float, lower: Float, upper: Float, into y: UnsafeMutablePointer<Float>) {
        let width = 2 * t.columns
        let lo = SIMD16<Float>(repeating: lower), hi = SIMD16<Float>(repeating: upper), b = SIMD16<Float>(repeating: bias)
        withUnsafeTemporaryAllocation(of: Float.self, capacity: 64) { buffer in
            guard let pair = buffer.baseAddress else { return }
            for ty in rows {
                var tx = 0
                while tx < t.columns {
                    let base = UnsafeRawPointer(m + (ty - rows.lowerBound) * t.columns + tx)
                    @inline(__always) func at(_ xi: Int) -> SIMD16<Float> {
                        base.loadUnaligned(fromByteOffset: xi * positionStride * 4, as: SIMD16<Float>.self)
                    }
                    // Aᵀ·M: two rows of four.
                    let s0 = at(0) + at(4) + at(8), s1 = at(1) + at(5) + at(9)
                    let s2 = at(2) + at(6) + at(10), s3 = at(3) + at(7) + at(11)
                    let d0 = at(4) - at(8) - at(12), d1 = at(5) - at(9) - at(13)
                    let d2 = at(6) - at(10) - at(14), d3 = at(7) - at(11) - at(15)
                    // (Aᵀ·M)·A.
                    let y00 = simdClamp(s0 + s1 + s2 + b, lo, hi), y01 = simdClamp(s1 - s2 - s3 + b, lo, hi)
                    let y10 = simdClamp(d0 + d1 + d2 + b, lo, hi), y11 = simdClamp(d1 - d2 - d3 + b, lo, hi)
                    let count = min(16, t.columns - tx)
                    let top = y + 2 * ty * width + 2 * tx, bottom = top + width
                    // Interleave each row's two outputs per tile through the stack.
                    UnsafeMutableRawPointer(pair).storeBytes(of: y00, as: SIMD16<Float>.self)
                    UnsafeMutableRawPointer(pair).storeBytes(of: y01, toByteOffset: 64, as: SIMD16<Float>.self)
                    UnsafeMutableRawPointer(pair).storeBytes(of: y10, toByteOffset: 128, as: SIMD16<Float>.self)
                    UnsafeMutableRawPointer(pair).storeBytes(of: y11, toByteOffset: 192, as: SIMD16<Float>.self)
                    for l in 0..<count {
                        top[2 * l] = pair[l]
                        top[2 * l + 1] = pair[16 + l]
                        bottom[2 * l] = pair[32 + l]
                        bottom[2 * l + 1] = pair[48 + l]
                    }
                    tx += 16
                }
            }
        }
    }
}
