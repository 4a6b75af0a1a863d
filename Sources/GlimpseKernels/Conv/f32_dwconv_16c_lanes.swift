/// Depthwise convolution of small strided planes with 16 channels in the vector lanes, such as
/// MobileNetV2's and EfficientNet's stride-2 layers down to 7×7, and of EfficientNet's 5×5 layers
/// up to 28×28. With pixels in the lanes, a stride-2 tap needs the even lanes of two loads and a
/// lane mask at the plane's edges, per tap and channel; the phase-plane path copies and compacts
/// every small plane instead, and both cost several times the FMAs they feed (576 × 14×14 → 7×7
/// took about 5× onnxruntime's time).
///
/// Here a block of 16 channels is transposed once into a zero-padded scratch image
/// `[Hp][Wp][16]`, so each tap of each output pixel is one aligned load and one FMA for all 16
/// channels, with no masks and no strides in the lanes. The accumulators go to a second scratch
/// `[pixel][16]`, which is transposed back into the channels' planes through the epilogue.
/// Transposes are 16×16 blocks in registers: four rounds of even/odd lane splits, 64 two-source
/// permutes per 256 floats.
public enum f32_dwconv_16c_lanes {
    /// Channels per block: the vector's lanes.
    public static let channelBlock = 16
    /// Largest output plane (pixels) this path takes at stride 2 for 3×3 kernels. At 14×14 (192
    /// channels from 28×28) the transposes, four permutes per input float, cost about what the
    /// row kernel does, and at 28×28 (144 from 56×56) 1.28× more.
    public static let maxOutPixels = 10 * 10
    /// Largest output plane (pixels) this path takes for kernels of at least 5×5, at stride 1 or 2
    /// (EfficientNet's): there 25 taps per pixel pay for the transposes. At stride 1, 1152 × 7×7,
    /// 672 × 14×14 and 240 × 28×28 ran 4–11 % faster than `f32_dwconv_8x16_same` (3×3 kernels 15–25 %
    /// slower, so they stay there); at stride 2, 144 × 56 → 28 ran 20 % faster than the
    /// phase-plane path.
    public static let maxWideKernelOutPixels = 28 * 28

    public static func applies(_ g: ConvGeometry) -> Bool {
        guard g.dilationH == 1 && g.dilationW == 1 && g.kernelHeight <= 7 && g.kernelWidth <= 7,
              g.strideH == g.strideW && (g.strideH == 1 || g.strideH == 2) else { return false }
        if g.kernelHeight >= 5 && g.kernelWidth >= 5 && g.outPixels <= maxWideKernelOutPixels { return true }
        return g.strideH == 2 && g.outPixels <= maxOutPixels
    }

    /// Rows and columns of the padded input that the outputs read.
    static func paddedSize(_ g: ConvGeometry) -> (rows: Int, columns: Int) {
        ((g.outHeight - 1) * g.strideH + g.kernelHeight, (g.outWidth - 1) * g.strideW + g.kernelWidth)
    }

    /// Floats of scratch one `run` needs (64-byte aligned for aligned loads): the padded input
    /// block and the output block, rounded up to whole 16-pixel chunks.
    public static func scratchCount(_ g: ConvGeometry) -> Int {
        let (hp, wp) = paddedSize(g)
        return (hp * wp + (g.outPixels + 15) / 16 * 16) * channelBlock + 16
    }

    /// Floats of `pack`'s output for `channels` channels of `taps` taps.
    public static func packedCount(channels: Int, taps: Int) -> Int {
        (channels + channelBlock - 1) / channelBlock * taps * channelBlock
    }

    /// Packs depthwise weights [C][taps] as blocks of 16 channels, tap-major: [block][tap][16],
    /// zero past the last channel.
    public static func pack(_ weights: UnsafePointer<Float>, channels: Int, taps: Int, into dst: UnsafeMutablePointer<Float>) {
        for block in 0..<(channels + channelBlock - 1) / channelBlock {
            for tap in 0..<taps {
                for i in 0..<channelBlock {
                    let c = block * channelBlock + i
                    dst[(block * taps + tap) * channelBlock + i] = c < channels ? weights[c * taps + tap] : 0
                }
            }
        }
    }

    /// Channels `channels` of one image (starting at a multiple of 16). `input` is the image's
    /// [C, H, W]; `weights` is `pack`'s output for all C channels; `output` the image's [C, OH·OW].
    /// The epilogue applies with row = channel − `channels.lowerBound` and column = pixel, and adds
    /// the bias. `scratch` holds `scratchCount(g)` floats, 64-byte aligned.
    public static func run(input: UnsafePointer<Float>, weights: UnsafePointer<Float>, channels: Range<Int>,
                           geometry g: ConvGeometry, output: UnsafeMutablePointer<Float>, epilogue: GemmEpilogue,
                           scratch: UnsafeMutablePointer<Float>) {
        let (hp, wp) = paddedSize(g)
        let padded = scratch, acc = scratch + hp * wp * channelBlock
        let taps = g.kernelHeight * g.kernelWidth
        var c0 = channels.lowerBound
        while c0 < channels.upperBound {
            let count = min(channelBlock, channels.upperBound - c0)
            fillPadded(input: input, c0: c0, count: count, geometry: g, rows: hp, columns: wp, into: padded)
            accumulate(padded: padded, columns: wp, weights: weights + c0 / channelBlock * taps * channelBlock,
                       geometry: g, into: acc)
            storePlanes(acc, c0: c0, count: count, geometry: g, output: output,
                        epilogue: epilogue.offset(row: c0 - channels.lowerBound, col: 0))
            c0 += count
        }
    }

    /// Transposes the 16 vectors at `src`, `stride` bytes apart, and passes row i of the result
    /// (lane j = lane i of source vector j) to `body(i, row)`.
    @inline(__always)
    public static func transpose(_ src: UnsafeRawPointer, stride: Int, _ body: (Int, SIMD16<Float>) -> Void) {
        @inline(__always) func load(_ i: Int) -> SIMD16<Float> { src.loadUnaligned(fromByteOffset: i &* stride, as: SIMD16<Float>.self) }
        var r0 = load(0), r1 = load(1), r2 = load(2), r3 = load(3), r4 = load(4), r5 = load(5), r6 = load(6), r7 = load(7)
        var r8 = load(8), r9 = load(9), r10 = load(10), r11 = load(11), r12 = load(12), r13 = load(13), r14 = load(14)
        var r15 = load(15)
        @inline(__always) func even(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float> { SIMD16(lowHalf: a.evenHalf, highHalf: b.evenHalf) }
        @inline(__always) func odd(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float> { SIMD16(lowHalf: a.oddHalf, highHalf: b.oddHalf) }
        // Each round sends element (i, j) of the 256 (index 16i + j) to the index rotated right by
        // one bit; four rounds rotate it by four, to 16j + i.
        for _ in 0..<4 {
            (r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15) = (
                even(r0, r1), even(r2, r3), even(r4, r5), even(r6, r7), even(r8, r9), even(r10, r11), even(r12, r13), even(r14, r15),
                odd(r0, r1), odd(r2, r3), odd(r4, r5), odd(r6, r7), odd(r8, r9), odd(r10, r11), odd(r12, r13), odd(r14, r15))
        }
        body(0, r0); body(1, r1); body(2, r2); body(3, r3); body(4, r4); body(5, r5); body(6, r6); body(7, r7)
        body(8, r8); body(9, r9); body(10, r10); body(11, r11); body(12, r12); body(13, r13); body(14, r14); body(15, r15)
    }

    /// Channels c0 ..< c0 + count of the input, padded and transposed: `padded[y][x]` holds the 16
    /// channels of input pixel (y − padTop, x − padLeft), zero outside the plane and past `count`
    /// channels (a short block reads its last channel again, and its lanes are never stored).
    @inline(__always)
    static func fillPadded(input: UnsafePointer<Float>, c0: Int, count: Int, geometry g: ConvGeometry,
                           rows hp: Int, columns wp: Int, into padded: UnsafeMutablePointer<Float>) {
        let zero = SIMD16<Float>()
        let w = g.inWidth, h = g.inHeight, pixels = g.inPixels
        // Padding: rows above and below the plane, columns left and right of it.
        for y in 0..<hp {
            let iy = y &- g.padTop
            let row = UnsafeMutableRawPointer(padded + y &* wp &* 16)
            if iy < 0 || iy >= h {
                for x in 0..<wp { row.storeBytes(of: zero, toByteOffset: x &* 64, as: SIMD16<Float>.self) }
                continue
            }
            for x in 0..<min(wp, g.padLeft) { row.storeBytes(of: zero, toByteOffset: x &* 64, as: SIMD16<Float>.self) }
            var x = max(0, g.padLeft &+ w)
            while x < wp {
                row.storeBytes(of: zero, toByteOffset: x &* 64, as: SIMD16<Float>.self)
                x &+= 1
            }
        }
        // The plane in 16-pixel chunks of the flat H·W order; a short last chunk is the plane's
        // last 16 pixels (overlapping the chunk before, same values written twice). Planes under
        // 16 pixels go lane by lane.
        let base = input + c0 &* pixels
        let last = count &- 1
        if pixels < 16 {
            for p in 0..<pixels {
                let y = p / w &+ g.padTop, x = p % w &+ g.padLeft
                guard y < hp && x < wp else { continue }
                let dst = padded + (y &* wp &+ x) &* 16
                for i in 0..<16 { dst[i] = base[min(i, last) &* pixels &+ p] }
            }
            return
        }
        var p0 = 0
        while p0 < pixels {
            let start = min(p0, pixels &- 16)
            var y = start / w, x = start &- y &* w
            let src = UnsafeRawPointer(base + start)
            if count == 16 {
                transpose(src, stride: pixels &* 4) { _, v in
                    store(v, y: y, x: x)
                    advance(&y, &x)
                }
            } else {
                // Source vector i is channel min(i, last): transposed from a staging copy in the
                // accumulator scratch (at least 16 vectors, and not yet written for this block).
                let stage = UnsafeMutableRawPointer(padded + hp &* wp &* 16)
                for i in 0..<16 {
                    stage.storeBytes(of: src.loadUnaligned(fromByteOffset: min(i, last) &* pixels &* 4, as: SIMD16<Float>.self),
                                     toByteOffset: i &* 64, as: SIMD16<Float>.self)
                }
                transpose(UnsafeRawPointer(stage), stride: 64) { _, v in
                    store(v, y: y, x: x)
                    advance(&y, &x)
                }
            }
            p0 &+= 16
        }
        @inline(__always) func store(_ v: SIMD16<Float>, y: Int, x: Int) {
            let py = y &+ g.padTop, px = x &+ g.padLeft
            if py < hp && px < wp {
                UnsafeMutableRawPointer(padded + (py &* wp &+ px) &* 16).storeBytes(of: v, as: SIMD16<Float>.self)
            }
        }
        @inline(__always) func advance(_ y: inout Int, _ x: inout Int) {
            x &+= 1
            if x == w {
                x = 0
                y &+= 1
            }
        }
    }

    /// `acc[pixel]` = Σ over taps of weight[tap] · padded[s·oy + kh][s·ox + kw], two output rows of
    /// four pixels at a time (eight chains of FMAs, each weight loaded once for all eight); pixels
    /// past the plane up to a whole chunk are zeroed.
    @inline(__always)
    static func accumulate(padded: UnsafeMutablePointer<Float>, columns wp: Int, weights: UnsafePointer<Float>,
                           geometry g: ConvGeometry, into acc: UnsafeMutablePointer<Float>) {
        let ho = g.outHeight, wo = g.outWidth, kh = g.kernelHeight, kw = g.kernelWidth
        let p = UnsafeRawPointer(padded), wts = UnsafeRawPointer(weights), out = UnsafeMutableRawPointer(acc)
        let sy = g.strideH &* wp &* 64, sx = g.strideW &* 64
        var oy = 0
        // Two rows at a time: four pixels of one row are four chains of dependent FMAs, which wait
        // on the FMA latency (half the throughput); eight are enough. A last odd row is its own
        // second row (the same values computed twice and stored twice, in the time four chains
        // would take alone). The last four pixels of a row overlap the ones before when the width
        // is not a multiple of 4 (computed twice, the same values).
        while oy < ho && wo >= 4 {
            let pair = oy &+ 1 < ho
            let dy = pair ? sy : 0
            var ox = 0
            while ox < wo {
                ox = min(ox, wo &- 4)
                var a0 = SIMD16<Float>(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0
                var t = 0
                for i in 0..<kh {
                    var q = oy &* sy &+ i &* wp &* 64 &+ ox &* sx
                    for _ in 0..<kw {
                        let wv = wts.loadUnaligned(fromByteOffset: t &* 64, as: SIMD16<Float>.self)
                        a0.addProduct(p.loadUnaligned(fromByteOffset: q, as: SIMD16<Float>.self), wv)
                        a1.addProduct(p.loadUnaligned(fromByteOffset: q &+ sx, as: SIMD16<Float>.self), wv)
                        a2.addProduct(p.loadUnaligned(fromByteOffset: q &+ 2 &* sx, as: SIMD16<Float>.self), wv)
                        a3.addProduct(p.loadUnaligned(fromByteOffset: q &+ 3 &* sx, as: SIMD16<Float>.self), wv)
                        b0.addProduct(p.loadUnaligned(fromByteOffset: q &+ dy, as: SIMD16<Float>.self), wv)
                        b1.addProduct(p.loadUnaligned(fromByteOffset: q &+ dy &+ sx, as: SIMD16<Float>.self), wv)
                        b2.addProduct(p.loadUnaligned(fromByteOffset: q &+ dy &+ 2 &* sx, as: SIMD16<Float>.self), wv)
                        b3.addProduct(p.loadUnaligned(fromByteOffset: q &+ dy &+ 3 &* sx, as: SIMD16<Float>.self), wv)
                        q &+= 64
                        t &+= 1
                    }
                }
                let o = (oy &* wo &+ ox) &* 64, o2 = pair ? o &+ wo &* 64 : o
                out.storeBytes(of: a0, toByteOffset: o, as: SIMD16<Float>.self)
                out.storeBytes(of: a1, toByteOffset: o &+ 64, as: SIMD16<Float>.self)
                out.storeBytes(of: a2, toByteOffset: o &+ 128, as: SIMD16<Float>.self)
                out.storeBytes(of: a3, toByteOffset: o &+ 192, as: SIMD16<Float>.self)
                out.storeBytes(of: b0, toByteOffset: o2, as: SIMD16<Float>.self)
                out.storeBytes(of: b1, toByteOffset: o2 &+ 64, as: SIMD16<Float>.self)
                out.storeBytes(of: b2, toByteOffset: o2 &+ 128, as: SIMD16<Float>.self)
                out.storeBytes(of: b3, toByteOffset: o2 &+ 192, as: SIMD16<Float>.self)
                ox &+= 4
            }
            oy &+= 2
        }
        while oy < ho {
            let rowBase = oy &* sy
            var ox = 0
            // Outputs under 4 wide: one pixel at a time, even and odd kernel rows in two chains.
            while ox < wo {
                var a0 = SIMD16<Float>(), a1 = a0
                var t = 0
                for i in 0..<kh {
                    var q = rowBase &+ i &* wp &* 64 &+ ox &* sx
                    for _ in 0..<kw {
                        let v = p.loadUnaligned(fromByteOffset: q, as: SIMD16<Float>.self)
                        let wv = wts.loadUnaligned(fromByteOffset: t &* 64, as: SIMD16<Float>.self)
                        if i & 1 == 0 { a0.addProduct(v, wv) } else { a1.addProduct(v, wv) }
                        q &+= 64
                        t &+= 1
                    }
                }
                out.storeBytes(of: a0 + a1, toByteOffset: (oy &* wo &+ ox) &* 64, as: SIMD16<Float>.self)
                ox &+= 1
            }
            oy &+= 1
        }
        var pixel = g.outPixels
        while pixel % 16 != 0 {
            out.storeBytes(of: SIMD16<Float>(), toByteOffset: pixel &* 64, as: SIMD16<Float>.self)
            pixel &+= 1
        }
    }

    /// The accumulators of channels c0 ..< c0 + count transposed back into their output planes,
    /// through the epilogue (row 0 = channel c0), 16 pixels at a time; a short last chunk lane by lane.
    /// Each 16 × 16 block is transposed into a small stack tile first and the epilogue then runs in
    /// a loop over its rows: applied inside the transpose's 16 unrolled row callbacks, the epilogue
    /// (swish included) was inlined 16 times, and the function grew so large that every vector
    /// store became an out-of-line call.
    @inline(__always)
    static func storePlanes(_ acc: UnsafeMutablePointer<Float>, c0: Int, count: Int, geometry g: ConvGeometry,
                            output: UnsafeMutablePointer<Float>, epilogue: GemmEpilogue) {
        let n = g.outPixels
        withUnsafeTemporaryAllocation(of: SIMD16<Float>.self, capacity: channelBlock) { buffer in
            guard let tile = buffer.baseAddress.map(UnsafeMutableRawPointer.init) else { return }
            var j0 = 0
            while j0 < n {
                let lanes = min(16, n &- j0)
                transpose(UnsafeRawPointer(acc + j0 &* 16), stride: 64) { c, v in
                    tile.storeBytes(of: v, toByteOffset: c &* 64, as: SIMD16<Float>.self)
                }
                for c in 0..<count {
                    let v = tile.load(fromByteOffset: c &* 64, as: SIMD16<Float>.self)
                    let dst = output + ((c0 &+ c) &* n &+ j0)
                    if lanes == 16 {
                        UnsafeMutableRawPointer(dst).storeBytes(of: epilogue.apply(v, row: c, col: j0), as: SIMD16<Float>.self)
                    } else {
                        epilogue.store(v, row: c, col: j0, lanes: lanes, to: dst)
                    }
                }
                j0 &+= 16
            }
        }
    }
}
