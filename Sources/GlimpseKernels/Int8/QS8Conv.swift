#if GLIMPSE_VNNI
import CGlimpseSIMD
#endif

/// Convolution (group 1) as u8 × s8 GEMM: weights `[Cout][Cin·KH·KW]` packed once
/// (`QS8Gemm.packA`), and for each tile of 32 output pixels of one image a B panel of u8 inputs:
/// the input rows themselves for pointwise convolutions, an im2col gather (padding = the input zero
/// point, so it adds nothing to `Σ w·(x − zx)`) otherwise. The panel (a few KiB) stays in L1 while
/// every 8-row block of weights runs over it.
public struct QS8Conv: Sendable {
    public let geometry: ConvGeometry
    public let outChannels: Int
    public let inputZeroPoint: UInt8
    /// The weights are packed wide and panels widened (`QS8Gemm.packsWide`, the AVX2 kernel): fixed
    /// when the weights are packed, so a model keeps the kernel its weights were packed for.
    public let wide: Bool

    public init(geometry: ConvGeometry, outChannels: Int, inputZeroPoint: UInt8, wide: Bool = QS8Gemm.packsWide) {
        self.geometry = geometry
        self.outChannels = outChannels
        self.inputZeroPoint = inputZeroPoint
        self.wide = wide
    }

    public var k: Int { geometry.patchSize }
    public var tilesPerImage: Int { (geometry.outPixels + QS8Gemm.nr - 1) / QS8Gemm.nr }
    /// Scratch bytes per thread (one panel).
    public var panelBytes: Int { QS8Gemm.panelCount(k: k, wide: wide) }

    /// Computes output tile `tile` of one image: `x` is `[Cin][H][W]`, `y` is `[Cout][OH][OW]`.
    @inline(__always)
    public func runTile(_ tile: Int, x: UnsafePointer<UInt8>, y: UnsafeMutablePointer<UInt8>, packedA: UnsafePointer<Int8>,
                        requant rq: RequantPointers, panel: UnsafeMutablePointer<UInt8>) {
        let p0 = tile * QS8Gemm.nr
        let n = min(QS8Gemm.nr, geometry.outPixels - p0)
        if geometry.isPointwise {
            packPointwise(x: x, p0: p0, n: n, panel: panel)
        } else {
#if GLIMPSE_VNNI
            if geometry.strideW <= 2 && geometry.dilationW == 1 {
                packIm2colRuns(x: x, p0: p0, n: n, panel: panel)
            } else {
                packIm2col(x: x, p0: p0, n: n, panel: panel)
            }
#else
            packIm2col(x: x, p0: p0, n: n, panel: panel)
#endif
        }
        let groups = QS8Gemm.kGroups(k), aRow = QS8Gemm.aRowBytes(k: k, wide: wide)
        if wide { QS8Gemm.widenPanel(panel, groups: groups) }
        let outPixels = geometry.outPixels
        var row = 0
        while row < outChannels {
            QS8Gemm.kernel(a: packedA + row * aRow, panel: panel, groups: groups, rows: min(QS8Gemm.mr, outChannels - row),
                           row0: row, n: n, c: y + row * outPixels + p0, ldc: outPixels, requant: rq, wide: wide)
            row += QS8Gemm.mr
        }
    }

    /// Panel from the input rows (1×1, stride 1, no padding): k-group g holds channels 4g ..< 4g+4.
    /// Pixels `p0 ..< p0 + n` go to panel columns `column ..< column + n`.
    @inline(__always)
    func packPointwise(x: UnsafePointer<UInt8>, p0: Int, n: Int, panel: UnsafeMutablePointer<UInt8>, column: Int = 0) {
        let pixels = geometry.inPixels, channels = geometry.inChannels
        for g in 0..<QS8Gemm.kGroups(channels) {
            let dst = panel + g * QS8Gemm.nr * 4 + 4 * column
            let c0 = 4 * g
            var j = 0
#if GLIMPSE_VNNI
            if c0 + 4 <= channels {
                let r = x + c0 * pixels + p0
                while j + 16 <= n {
                    let v = glimpse_interleave4x16_u8(r + j, r + pixels + j, r + 2 * pixels + j, r + 3 * pixels + j)
                    UnsafeMutableRawPointer(dst + 4 * j).storeBytes(of: v, as: SIMD8<Int64>.self)
                    j += 16
                }
            }
#endif
            while j < n {
                for i in 0..<4 {
                    dst[4 * j + i] = c0 + i < channels ? x[(c0 + i) * pixels + p0 + j] : 0
                }
                j += 1
            }
        }
    }

#if GLIMPSE_VNNI
    /// Output rows the tile's pixels cross: at most this many runs (beyond it, the byte path).
    static let maxRuns = 8

    /// The im2col panel when the window moves one or two input pixels per output pixel along a row
    /// (stride 1 or 2 across, dilation 1): each panel row kk = (ci, ky, kx) is, per output row the
    /// tile crosses, one stretch of an input row, contiguous or every other byte. Four panel rows are
    /// gathered at a time into 32-byte rows: per stretch one unaligned vector load (halved to the even
    /// bytes by a truncating word-to-byte move for stride 2) stored between two stores of the zero
    /// point, where the window leaves the input; then interleaved into the panel's k-groups, 16
    /// pixels per instruction. Same panel as `packIm2col`, bit for bit.
    @inline(__always)
    func packIm2colRuns(x: UnsafePointer<UInt8>, p0: Int, n: Int, panel: UnsafeMutablePointer<UInt8>) {
        let g = geometry
        let stride = g.strideW
        // The runs: output row × strideH, first input column of the window's left edge (kx = 0, so
        // before the padding is taken off), pixels, first panel column.
        var runCount = 0
        var runRow = SIMD8<Int>(), runColumn = SIMD8<Int>(), runCount8 = SIMD8<Int>(), runStart = SIMD8<Int>()
        do {
            var j = 0, oy = p0 / g.outWidth, ox = p0 - (p0 / g.outWidth) * g.outWidth
            while j < n {
                guard runCount < Self.maxRuns else { return packIm2col(x: x, p0: p0, n: n, panel: panel) }
                let count = min(n - j, g.outWidth - ox)
                runRow[runCount] = oy * g.strideH - g.padTop
                runColumn[runCount] = ox * stride - g.padLeft
                runCount8[runCount] = count
                runStart[runCount] = j
                runCount += 1
                j += count
                ox = 0
                oy += 1
            }
        }
        // Vector loads stay inside this image's input: [x, end).
        let end = x + g.inChannels * g.inPixels
        let zx = SIMD32<UInt8>(repeating: inputZeroPoint)
        let k = g.patchSize
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 4 * 64) { rowsBuffer in
            guard let rows = rowsBuffer.baseAddress else { return }
            var kk = 0
            // Panel row kk + r is input channel ci, window row ky, column kx (kx fastest).
            var ci = 0, ky = 0, kx = 0
            while kk < k {
                for r in 0..<4 {
                    let row = rows + r &* 64
                    guard kk &+ r < k else {
                        UnsafeMutableRawPointer(row).storeBytes(of: SIMD32<UInt8>(), as: SIMD32<UInt8>.self)
                        continue
                    }
                    let plane = x + ci &* g.inPixels
                    let dy = ky &* g.dilationH
                    for q in 0..<runCount {
                        let out = row + runStart[q], iy = runRow[q] &+ dy
                        guard iy >= 0 && iy < g.inHeight else {
                            UnsafeMutableRawPointer(out).storeBytes(of: zx, as: SIMD32<UInt8>.self)
                            continue
                        }
                        // Lane m reads input column ix0 + m·stride: lanes lo ..< hi fall inside the
                        // input, the others in the padding (shifts, not divisions, for stride 2).
                        let ix0 = runColumn[q] &+ kx
                        var lo: Int, hi: Int
                        if stride == 1 {
                            lo = -ix0
                            hi = g.inWidth &- ix0
                        } else {
                            lo = ix0 < 0 ? (1 &- ix0) >> 1 : 0
                            hi = ix0 >= g.inWidth ? 0 : ((g.inWidth &- 1 &- ix0) >> 1) &+ 1
                        }
                        let count = runCount8[q]
                        lo = min(count, max(0, lo))
                        hi = min(count, max(lo, hi))
                        // Three overlapping 32-byte stores: the zero point, the stretch from lane lo,
                        // the zero point again from lane hi (the row has 32 bytes of slack, and later
                        // runs overwrite what spills into their lanes).
                        UnsafeMutableRawPointer(out).storeBytes(of: zx, as: SIMD32<UInt8>.self)
                        guard hi > lo else { continue }
                        let src = plane + (iy &* g.inWidth &+ ix0 &+ lo &* stride)
                        if src + 32 &* stride <= end {
                            let pixels = stride == 1 ? UnsafeRawPointer(src).loadUnaligned(as: SIMD32<UInt8>.self)
                                : SIMD32<UInt8>(truncatingIfNeeded: UnsafeRawPointer(src).loadUnaligned(as: SIMD32<UInt16>.self))
                            UnsafeMutableRawPointer(out + lo).storeBytes(of: pixels, as: SIMD32<UInt8>.self)
                        } else {
                            for m in 0..<(hi &- lo) { out[lo &+ m] = src[m &* stride] }
                        }
                        UnsafeMutableRawPointer(out + hi).storeBytes(of: zx, as: SIMD32<UInt8>.self)
                    }
                    kx &+= 1
                    if kx == g.kernelWidth {
                        kx = 0
                        ky &+= 1
                        if ky == g.kernelHeight { ky = 0; ci &+= 1 }
                    }
                }
                let dst = panel + (kk >> 2) &* QS8Gemm.nr &* 4
                var j = 0
                while j < n {
                    let v = glimpse_interleave4x16_u8(rows + j, rows + 64 + j, rows + 128 + j, rows + 192 + j)
                    UnsafeMutableRawPointer(dst + 4 &* j).storeBytes(of: v, as: SIMD8<Int64>.self)
                    j &+= 16
                }
                kk &+= 4
            }
        }
    }
#endif

    /// Panel by im2col: row kk = (ci, ky, kx), column j = output pixel p0 + j. The tile's pixels
    /// are walked as runs along output rows, so each run is a strided copy of one input row with
    /// the zero point where the window leaves the input.
    @inline(__always)
    func packIm2col(x: UnsafePointer<UInt8>, p0: Int, n: Int, panel: UnsafeMutablePointer<UInt8>) {
        let g = geometry
        let zx = inputZeroPoint
        let oy0 = p0 / g.outWidth, ox0 = p0 - oy0 * g.outWidth
        var kk = 0
        for ci in 0..<g.inChannels {
            let plane = x + ci * g.inPixels
            for ky in 0..<g.kernelHeight {
                let dy = ky * g.dilationH - g.padTop
                for kx in 0..<g.kernelWidth {
                    let dx = kx * g.dilationW - g.padLeft
                    let dst = panel + (kk >> 2) * QS8Gemm.nr * 4 + (kk & 3)
                    var j = 0, oy = oy0, ox = ox0
                    while j < n {
                        let count = min(n - j, g.outWidth - ox)
                        let iy = oy * g.strideH + dy
                        let out = dst + 4 * j
                        if iy < 0 || iy >= g.inHeight {
                            for m in 0..<count { out[4 * m] = zx }
                        } else {
                            let row = plane + iy * g.inWidth
                            let ix0 = ox * g.strideW + dx
                            let lo = min(count, ix0 < 0 ? (-ix0 + g.strideW - 1) / g.strideW : 0)
                            let hi = max(lo, ix0 >= g.inWidth ? 0 : min(count, (g.inWidth - 1 - ix0) / g.strideW + 1))
                            for m in 0..<lo { out[4 * m] = zx }
                            var src = row + ix0 + lo * g.strideW
                            for m in lo..<hi {
                                out[4 * m] = src.pointee
                                src += g.strideW
                            }
                            for m in hi..<count { out[4 * m] = zx }
                        }
                        j += count
                        ox = 0
                        oy += 1
                    }
                    kk += 1
                }
            }
        }
        // Padding rows of the last k-group meet zero weights; keep them defined.
        while kk & 3 != 0 {
            let dst = panel + (kk >> 2) * QS8Gemm.nr * 4 + (kk & 3)
            for j in 0..<n { dst[4 * j] = 0 }
            kk += 1
        }
    }
}

/// Scalar reference of an int8 convolution (any group count): `y = requantize(Σ w·(x − zx) + bias)`,
/// padding contributing nothing. `w` is `[Cout][Cin/group][KH][KW]`; `r.bias` is the model's bias.
public enum QS8ConvReference {
    public static func conv(x: UnsafePointer<UInt8>, inputZeroPoint zx: UInt8, w: UnsafePointer<Int8>, group: Int,
                            geometry g: ConvGeometry, outChannels: Int, requant r: Requantization,
                            y: UnsafeMutablePointer<UInt8>) {
        let perGroupOut = outChannels / group
        for co in 0..<outChannels {
            let gi = co / perGroupOut
            for oy in 0..<g.outHeight {
                for ox in 0..<g.outWidth {
                    var acc: Int32 = 0
                    for ci in 0..<g.inChannels {
                        let plane = x + (gi * g.inChannels + ci) * g.inPixels
                        for ky in 0..<g.kernelHeight {
                            let iy = oy * g.strideH - g.padTop + ky * g.dilationH
                            guard iy >= 0 && iy < g.inHeight else { continue }
                            for kx in 0..<g.kernelWidth {
                                let ix = ox * g.strideW - g.padLeft + kx * g.dilationW
                                guard ix >= 0 && ix < g.inWidth else { continue }
                                let wv = Int32(w[((co * g.inChannels + ci) * g.kernelHeight + ky) * g.kernelWidth + kx])
                                acc &+= wv * (Int32(plane[iy * g.inWidth + ix]) - Int32(zx))
                            }
                        }
                    }
                    y[(co * g.outHeight + oy) * g.outWidth + ox] = r.requantize(acc, channel: co)
                }
            }
        }
    }
}
