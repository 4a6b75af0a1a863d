/// `f32_conv_8x16_direct` for at most 8 output channels and few input planes (mnist-8's first
/// layer, 1 → 8 channels, 5×5 on 28×28): the taps read shifted copies of the input instead of
/// masking each load.
///
/// With one channel block, each tap's masked load feeds only 8 (or, in pixel pairs, 16) fused
/// multiply-adds, and the masks, two bounds checks per load and the lane coordinates they need
/// (registers beside 16 accumulators) cost as much as the arithmetic: the layer ran at about a third
/// of the FMA peak. Here the thread first writes, per input channel and kernel column, a copy of the
/// input rows its pixel blocks read, shifted by the column's offset, with zeros where the tap falls
/// outside the plane (above, below and across). Tap (kh, kw) of output pixel j is then element
/// j + kh·dilationH·W of copy (c, kw): a plain load, whatever the block's position in the plane.
extension f32_conv_8x16_direct {
    /// Most floats of copies this path writes (per thread): they stay in L2, and cost a write per
    /// 8·KH (or 16·KH) multiply-adds that they feed.
    public static let maxCopyFloats = 16 << 10

    /// Whether `run`, given copy scratch, reads the input through copies for this convolution: at
    /// most 8 output channels. With two channel blocks (mnist-8's second layer, 8 → 16 channels) each
    /// masked load feeds 16 multiply-adds per input channel, and copies made it 28% slower.
    public static func readsCopies(_ g: ConvGeometry, outChannels: Int) -> Bool {
        g.isShiftedPlane && outChannels <= channelBlock && copyFloats(g) <= maxCopyFloats
    }

    /// Rows of each copy: every output row and the rows below it that the kernel reaches.
    static func copyRows(_ g: ConvGeometry) -> Int { g.outHeight + (g.kernelHeight - 1) * g.dilationH }

    /// Floats from one copy to the next: its rows and 16 floats that the last block's lanes past the
    /// plane may read.
    static func copyStride(_ g: ConvGeometry) -> Int { (copyRows(g) * g.inWidth + 16 + 15) / 16 * 16 }

    /// Floats of scratch the copies take (per thread).
    public static func copyFloats(_ g: ConvGeometry) -> Int { g.inChannels * g.kernelWidth * copyStride(g) }

    /// Writes the copies' rows that output pixel blocks `blocks` read, 16 floats at a time: zeros
    /// left of the columns inside the plane, those columns (the last vector ending at the last of
    /// them), zeros right of them (the last vector running on into the next row, written after it). Calls to
    /// `memcpy` and `memset` per 28-float row cost a third of the layer's arithmetic, and lane masks
    /// built per vector more.
    static func fillCopies(input: UnsafePointer<Float>, geometry g: ConvGeometry, blocks: Range<Int>,
                           copies: UnsafeMutablePointer<Float>) {
        let w = g.inWidth, n = g.outPixels, stride = copyStride(g), total = copyRows(g)
        let first = blocks.lowerBound * 16 / w, last = (min(blocks.upperBound * 16, n) - 1) / w
        let rows = first..<min(total, last + (g.kernelHeight - 1) * g.dilationH + 1)
        for c in 0..<g.inChannels {
            for kw in 0..<g.kernelWidth {
                let copy = copies + (c * g.kernelWidth + kw) * stride
                let dx = kw * g.dilationW - g.padLeft
                // Columns x of the copy whose source column x + dx lies in the plane.
                let lo = min(w, max(0, -dx)), hi = max(lo, min(w, w - dx))
                for r in rows {
                    let dst = copy + r * w, iy = r - g.padTop
                    guard iy >= 0 && iy < g.inHeight && hi - lo >= 16 else {
                        zeros(dst, w)
                        if iy >= 0 && iy < g.inHeight {
                            let src = input + c * g.inPixels + iy * w + dx
                            for x in lo..<hi { dst[x] = src[x] }
                        }
                        continue
                    }
                    // Zeros left of `lo` (the copies overwrite what falls at or past it), the
                    // columns inside, then zeros from `hi` on (running on into the next row).
                    if lo > 0 { zeros(dst, lo) }
                    let src = input + c * g.inPixels + iy * w + dx
                    var x = lo
                    while x + 16 < hi {
                        copy16(src + x, dst + x)
                        x += 16
                    }
                    copy16(src + (hi - 16), dst + (hi - 16))
                    if hi < w { zeros(dst + hi, w - hi) }
                }
                if rows.upperBound == total {
                    (copy + total * w).update(repeating: 0, count: stride - total * w)
                }
            }
        }
    }

    /// Zeros `count` floats from `dst`, 16 at a time (the last vector may run past them).
    @inline(__always)
    static func zeros(_ dst: UnsafeMutablePointer<Float>, _ count: Int) {
        var x = 0
        while x < count {
            UnsafeMutableRawPointer(dst + x).storeBytes(of: SIMD16<Float>(), as: SIMD16<Float>.self)
            x += 16
        }
    }

    @inline(__always)
    static func copy16(_ src: UnsafePointer<Float>, _ dst: UnsafeMutablePointer<Float>) {
        UnsafeMutableRawPointer(dst).storeBytes(of: UnsafeRawPointer(src).loadUnaligned(as: SIMD16<Float>.self), as: SIMD16<Float>.self)
    }

    /// Output pixel blocks `blocks` of one image (at most 8 output channels) from the copies that
    /// `fillCopies` wrote for them.
    static func runCopied(copies: UnsafePointer<Float>, weights: UnsafePointer<Float>, m: Int, geometry g: ConvGeometry,
                          output: UnsafeMutablePointer<Float>, epilogue: GemmEpilogue, blocks: Range<Int>) {
        let n = g.outPixels
        @inline(__always)
        func store(_ acc: SIMD16<Float>, _ channel: Int, _ j: Int, _ count: Int) {
            guard channel < m else { return }
            epilogue.store(acc, row: channel, col: j, lanes: count, to: output + channel * n + j)
        }
        var block = blocks.lowerBound
        while block < blocks.upperBound {
            let j0 = block * 16
            if pairs && block + 1 < blocks.upperBound {
                copiedPair(copies: copies, weights: weights, g: g, j0: j0, n: n, store: store)
                block += 2
            } else {
                copiedBlock(copies: copies, weights: weights, g: g, j0: j0, n: n, store: store)
                block += 1
            }
        }
    }

    /// The 8 output channels of the pixel blocks at `j0` and `j0 + 16` (the second may be short).
    @inline(__always)
    static func copiedPair(copies: UnsafePointer<Float>, weights: UnsafePointer<Float>, g: ConvGeometry,
                           j0: Int, n: Int, store: (SIMD16<Float>, Int, Int, Int) -> Void) {
        let kernelWidth = g.kernelWidth, kernelHeight = g.kernelHeight, stride = copyStride(g)
        let rowStep = g.dilationH &* g.inWidth, weightStep = kernelWidth &* channelBlock
        let taps = kernelHeight &* kernelWidth
        var a0 = SIMD16<Float>(), a1 = SIMD16<Float>(), a2 = SIMD16<Float>(), a3 = SIMD16<Float>()
        var a4 = SIMD16<Float>(), a5 = SIMD16<Float>(), a6 = SIMD16<Float>(), a7 = SIMD16<Float>()
        var c0 = SIMD16<Float>(), c1 = SIMD16<Float>(), c2 = SIMD16<Float>(), c3 = SIMD16<Float>()
        var c4 = SIMD16<Float>(), c5 = SIMD16<Float>(), c6 = SIMD16<Float>(), c7 = SIMD16<Float>()
        var copy = copies + j0
        for c in 0..<g.inChannels {
            for kw in 0..<kernelWidth {
                var p = UnsafeRawPointer(copy)
                var wp = weights + (c &* taps &+ kw) &* channelBlock
                for _ in 0..<kernelHeight {
                    let v = p.loadUnaligned(as: SIMD16<Float>.self)
                    let u = p.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
                    let w0 = SIMD16<Float>(repeating: wp[0]), w1 = SIMD16<Float>(repeating: wp[1])
                    let w2 = SIMD16<Float>(repeating: wp[2]), w3 = SIMD16<Float>(repeating: wp[3])
                    a0.addProduct(v, w0); c0.addProduct(u, w0)
                    a1.addProduct(v, w1); c1.addProduct(u, w1)
                    a2.addProduct(v, w2); c2.addProduct(u, w2)
                    a3.addProduct(v, w3); c3.addProduct(u, w3)
                    let w4 = SIMD16<Float>(repeating: wp[4]), w5 = SIMD16<Float>(repeating: wp[5])
                    let w6 = SIMD16<Float>(repeating: wp[6]), w7 = SIMD16<Float>(repeating: wp[7])
                    a4.addProduct(v, w4); c4.addProduct(u, w4)
                    a5.addProduct(v, w5); c5.addProduct(u, w5)
                    a6.addProduct(v, w6); c6.addProduct(u, w6)
                    a7.addProduct(v, w7); c7.addProduct(u, w7)
                    p += rowStep &* 4
                    wp += weightStep
                }
                copy += stride
            }
        }
        let j1 = j0 + 16, count1 = min(16, n - j1)
        storeBlock(a0, a1, a2, a3, a4, a5, a6, a7, j: j0, count: 16, store)
        storeBlock(c0, c1, c2, c3, c4, c5, c6, c7, j: j1, count: count1, store)
    }

    /// The 8 output channels of the pixel block at `j0` (possibly short).
    @inline(__always)
    static func copiedBlock(copies: UnsafePointer<Float>, weights: UnsafePointer<Float>, g: ConvGeometry,
                            j0: Int, n: Int, store: (SIMD16<Float>, Int, Int, Int) -> Void) {
        let kernelWidth = g.kernelWidth, kernelHeight = g.kernelHeight, stride = copyStride(g)
        let rowStep = g.dilationH &* g.inWidth, weightStep = kernelWidth &* channelBlock
        let taps = kernelHeight &* kernelWidth
        var a0 = SIMD16<Float>(), a1 = SIMD16<Float>(), a2 = SIMD16<Float>(), a3 = SIMD16<Float>()
        var a4 = SIMD16<Float>(), a5 = SIMD16<Float>(), a6 = SIMD16<Float>(), a7 = SIMD16<Float>()
        var copy = copies + j0
        for c in 0..<g.inChannels {
            for kw in 0..<kernelWidth {
                var p = UnsafeRawPointer(copy)
                var wp = weights + (c &* taps &+ kw) &* channelBlock
                for _ in 0..<kernelHeight {
                    let v = p.loadUnaligned(as: SIMD16<Float>.self)
                    a0.addProduct(v, SIMD16(repeating: wp[0]))
                    a1.addProduct(v, SIMD16(repeating: wp[1]))
                    a2.addProduct(v, SIMD16(repeating: wp[2]))
                    a3.addProduct(v, SIMD16(repeating: wp[3]))
                    a4.addProduct(v, SIMD16(repeating: wp[4]))
                    a5.addProduct(v, SIMD16(repeating: wp[5]))
                    a6.addProduct(v, SIMD16(repeating: wp[6]))
                    a7.addProduct(v, SIMD16(repeating: wp[7]))
                    p += rowStep &* 4
                    wp += weightStep
                }
                copy += stride
            }
        }
        let count = min(16, n - j0)
        storeBlock(a0, a1, a2, a3, a4, a5, a6, a7, j: j0, count: count, store)
    }
}
