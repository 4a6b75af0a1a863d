/// Direct convolution for stride-1 convolutions whose output is as wide as the input
/// (`ConvGeometry.isShiftedPlane`) and whose reduction is short (Cin·KH·KW ≤ `maxPatch`), such as
/// the first layers of small classifiers. There a GEMM spends most of its time packing panels and
/// entering tiles for a few K steps. Here each block of 16 output pixels keeps 8 output channels in
/// registers and adds every tap of every input channel straight from the shifted input plane: one
/// masked vector load feeds 8 fused multiply-adds.
public enum f32_conv_8x16_direct {
    /// Output channels per register block.
    public static let channelBlock = 8
    /// Largest Cin·KH·KW this path takes for any number of output channels.
    public static let maxPatch = 64
    /// Largest Cin·KH·KW it takes for at most `pairChannels` output channels. There every masked load
    /// feeds 16 fused multiply-adds (two channel blocks at once), and the GEMM's 6-row tiles would be
    /// a third empty: mnist-8's second convolution (16 × 8·5·5) ran its GEMM at about a quarter of
    /// the FMA peak.
    public static let maxPairPatch = pairs ? 256 : maxPatch
    public static let pairChannels = 2 * channelBlock
    /// Whether channel blocks run in pairs: 16 accumulators of 16 floats need the 32 registers of
    /// AVX-512 (the VNNI targets here); with AVX2's 16 they would spill, so there blocks run one at a time.
    #if GLIMPSE_VNNI
    public static let pairs = true
    #else
    public static let pairs = false
    #endif

    /// Small planes (at most `smallPlanePixels` output pixels, as in the last layers of CIFAR-10
    /// networks): the path also takes reductions up to `smallPlanePatch` for up to
    /// `smallPlaneChannels` output channels. A 4×4 plane is one 16-pixel block, where the GEMM's
    /// 32-column tiles run half empty and Winograd's 2×2 tiles are mostly transform: cifar10-large's
    /// 128 → 128 layer on 4×4 ran at 24–34 GFLOP/s by Winograd and 84–92 here.
    public static let smallPlanePatch = 1152
    public static let smallPlaneChannels = 128
    public static let smallPlanePixels = 64

    /// Whether the path runs a convolution with reduction length `patch`, `outChannels` output channels
    /// (per group) and `taps` kernel taps at any plane size; its weights are then packed when it loads.
    /// The small-plane rule depends on the plane, so those weights are packed by the first plan that
    /// needs them. 1×1 kernels stay with the GEMM: with a single tap there are no shifted loads to
    /// share, and its 6×32 tiles reuse each load better (MobileNetV2 ran 10–15 % slower with them here).
    public static func takes(patch: Int, outChannels: Int, taps: Int) -> Bool {
        taps > 1 && patch <= maxPairPatch && (patch <= maxPatch || outChannels <= pairChannels)
    }

    /// Whether the path runs this convolution.
    public static func applies(_ g: ConvGeometry, outChannels: Int) -> Bool {
        guard g.isShiftedPlane else { return false }
        let (k, taps) = (g.patchSize, g.kernelHeight * g.kernelWidth)
        return takes(patch: k, outChannels: outChannels, taps: taps)
            || (pairs && taps > 1 && k <= smallPlanePatch && outChannels <= smallPlaneChannels && g.outPixels <= smallPlanePixels)
    }

    /// Floats of packed weights for `m` output channels and reduction length `k`.
    public static func packedCount(m: Int, k: Int) -> Int {
        (m + channelBlock - 1) / channelBlock * k * channelBlock
    }

    /// Packs row-major weights [m][k] as blocks of 8 output channels, [block][k][8], zero-padded.
    public static func pack(_ w: UnsafePointer<Float>, m: Int, k: Int, into dst: UnsafeMutablePointer<Float>) {
        let blocks = (m + channelBlock - 1) / channelBlock
        dst.update(repeating: 0, count: blocks * k * channelBlock)
        for co in 0..<m {
            let block = co / channelBlock, lane = co % channelBlock
            for kk in 0..<k {
                dst[(block * k + kk) * channelBlock + lane] = w[co * k + kk]
            }
        }
    }

    /// Pixel blocks of 16 in one output plane.
    public static func blockCount(_ g: ConvGeometry) -> Int { (g.outPixels + 15) / 16 }

    /// Output pixel blocks `blocks` of one image, every output channel. `input` is the image
    /// ([Cin, H, W]); `readable` the offsets from it that may be read (see `Im2colPanelSource.readable`).
    /// `output` is [m, OH·OW]; the epilogue's row is the output channel, its column the pixel.
    /// `copies` (`copyFloats` of scratch) lets convolutions that `readsCopies` read shifted copies of
    /// the input instead of masked loads.
    public static func run(input: UnsafePointer<Float>, readable: Range<Int>, weights: UnsafePointer<Float>, m: Int,
                           geometry g: ConvGeometry, output: UnsafeMutablePointer<Float>, epilogue: GemmEpilogue,
                           blocks: Range<Int>, copies: UnsafeMutablePointer<Float>? = nil) {
        if let copies, readsCopies(g, outChannels: m) {
            guard !blocks.isEmpty else { return }
            fillCopies(input: input, geometry: g, blocks: blocks, copies: copies)
            runCopied(copies: copies, weights: weights, m: m, geometry: g, output: output, epilogue: epilogue, blocks: blocks)
            return
        }
        let taps = g.kernelHeight * g.kernelWidth, k = g.patchSize
        let pixels = g.inPixels, n = g.outPixels
        let channelBlocks = (m + channelBlock - 1) / channelBlock
        @inline(__always)
        func store(_ acc: SIMD16<Float>, _ channel: Int, _ j: Int, _ count: Int) {
            guard channel < m else { return }
            epilogue.store(acc, row: channel, col: j, lanes: count, to: output + channel * n + j)
        }
        var block = blocks.lowerBound
        while block < blocks.upperBound {
            // One channel block: two pixel blocks at a time, so each tap's set-up (its masks and
            // offsets) and each weight serve 16 fused multiply-adds per input channel, not 8. With
            // one input channel (the first layer of mnist-8) the set-up outweighed the arithmetic.
            if pairs && channelBlocks == 1 && block + 1 < blocks.upperBound {
                pixelPair(input: input, readable: readable, weights: weights, g: g, j0: block * 16, n: n, store: store)
                block += 2
                continue
            }
            let j0 = block * 16
            let count = min(16, n - j0)
            let lanes = ShiftedLanes(first: j0, count: count, width: g.inWidth)
            block += 1
            @inline(__always)
            func finish(_ acc: SIMD16<Float>, _ channel: Int) { store(acc, channel, j0, count) }
            var cb = 0
            // Two channel blocks at a time where there are two: each masked load then feeds 16 fused
            // multiply-adds instead of 8 (16 accumulators, the load and the broadcasts fit AVX-512's
            // 32 registers).
            while pairs && cb + 1 < channelBlocks {
                var a0 = SIMD16<Float>(), a1 = SIMD16<Float>(), a2 = SIMD16<Float>(), a3 = SIMD16<Float>()
                var a4 = SIMD16<Float>(), a5 = SIMD16<Float>(), a6 = SIMD16<Float>(), a7 = SIMD16<Float>()
                var b0 = SIMD16<Float>(), b1 = SIMD16<Float>(), b2 = SIMD16<Float>(), b3 = SIMD16<Float>()
                var b4 = SIMD16<Float>(), b5 = SIMD16<Float>(), b6 = SIMD16<Float>(), b7 = SIMD16<Float>()
                let wBlock = weights + cb * k * channelBlock, wNext = wBlock + k * channelBlock
                for kh in 0..<g.kernelHeight { for kw in 0..<g.kernelWidth {
                    let tap = kh &* g.kernelWidth &+ kw
                    let dy = kh &* g.dilationH &- g.padTop, dx = kw &* g.dilationW &- g.padLeft
                    let inside = lanes.inside(dy: dy, dx: dx, height: g.inHeight, width: g.inWidth)
                    var start = j0 &+ dy &* g.inWidth &+ dx
                    var wp = wBlock + tap * channelBlock, wq = wNext + tap * channelBlock
                    for _ in 0..<g.inChannels {
                        let v = ShiftedLanes.load(input, start, readable: readable, inside: inside)
                        a0.addProduct(v, SIMD16(repeating: wp[0]))
                        a1.addProduct(v, SIMD16(repeating: wp[1]))
                        a2.addProduct(v, SIMD16(repeating: wp[2]))
                        a3.addProduct(v, SIMD16(repeating: wp[3]))
                        a4.addProduct(v, SIMD16(repeating: wp[4]))
                        a5.addProduct(v, SIMD16(repeating: wp[5]))
                        a6.addProduct(v, SIMD16(repeating: wp[6]))
                        a7.addProduct(v, SIMD16(repeating: wp[7]))
                        b0.addProduct(v, SIMD16(repeating: wq[0]))
                        b1.addProduct(v, SIMD16(repeating: wq[1]))
                        b2.addProduct(v, SIMD16(repeating: wq[2]))
                        b3.addProduct(v, SIMD16(repeating: wq[3]))
                        b4.addProduct(v, SIMD16(repeating: wq[4]))
                        b5.addProduct(v, SIMD16(repeating: wq[5]))
                        b6.addProduct(v, SIMD16(repeating: wq[6]))
                        b7.addProduct(v, SIMD16(repeating: wq[7]))
                        start &+= pixels
                        wp += taps * channelBlock
                        wq += taps * channelBlock
                    }
                } }
                let first = cb * channelBlock, second = first + channelBlock
                finish(a0, first); finish(a1, first + 1); finish(a2, first + 2); finish(a3, first + 3)
                finish(a4, first + 4); finish(a5, first + 5); finish(a6, first + 6); finish(a7, first + 7)
                finish(b0, second); finish(b1, second + 1); finish(b2, second + 2); finish(b3, second + 3)
                finish(b4, second + 4); finish(b5, second + 5); finish(b6, second + 6); finish(b7, second + 7)
                cb += 2
            }
            while cb < channelBlocks {
                var a0 = SIMD16<Float>(), a1 = SIMD16<Float>(), a2 = SIMD16<Float>(), a3 = SIMD16<Float>()
                var a4 = SIMD16<Float>(), a5 = SIMD16<Float>(), a6 = SIMD16<Float>(), a7 = SIMD16<Float>()
                let wBlock = weights + cb * k * channelBlock
                // Nested tap loops: no integer division per tap (a 64-bit divide costs tens of cycles).
                for kh in 0..<g.kernelHeight { for kw in 0..<g.kernelWidth {
                    let tap = kh &* g.kernelWidth &+ kw
                    let dy = kh &* g.dilationH &- g.padTop, dx = kw &* g.dilationW &- g.padLeft
                    let inside = lanes.inside(dy: dy, dx: dx, height: g.inHeight, width: g.inWidth)
                    var start = j0 &+ dy &* g.inWidth &+ dx
                    var wp = wBlock + tap * channelBlock
                    for _ in 0..<g.inChannels {
                        let v = ShiftedLanes.load(input, start, readable: readable, inside: inside)
                        a0.addProduct(v, SIMD16(repeating: wp[0]))
                        a1.addProduct(v, SIMD16(repeating: wp[1]))
                        a2.addProduct(v, SIMD16(repeating: wp[2]))
                        a3.addProduct(v, SIMD16(repeating: wp[3]))
                        a4.addProduct(v, SIMD16(repeating: wp[4]))
                        a5.addProduct(v, SIMD16(repeating: wp[5]))
                        a6.addProduct(v, SIMD16(repeating: wp[6]))
                        a7.addProduct(v, SIMD16(repeating: wp[7]))
                        start &+= pixels
                        wp += taps * channelBlock
                    }
                } }
                let first = cb * channelBlock
                finish(a0, first); finish(a1, first + 1); finish(a2, first + 2); finish(a3, first + 3)
                finish(a4, first + 4); finish(a5, first + 5); finish(a6, first + 6); finish(a7, first + 7)
                cb += 1
            }
        }
    }

    /// The first 8 output channels of the pixel blocks at `j0` and `j0 + 16` (the second may be short).
    @inline(__always)
    static func pixelPair(input: UnsafePointer<Float>, readable: Range<Int>, weights: UnsafePointer<Float>, g: ConvGeometry,
                          j0: Int, n: Int, store: (SIMD16<Float>, Int, Int, Int) -> Void) {
        let taps = g.kernelHeight * g.kernelWidth, pixels = g.inPixels
        let j1 = j0 + 16, count1 = min(16, n - j1)
        let lanes0 = ShiftedLanes(first: j0, count: 16, width: g.inWidth)
        let lanes1 = ShiftedLanes(first: j1, count: count1, width: g.inWidth)
        var a0 = SIMD16<Float>(), a1 = SIMD16<Float>(), a2 = SIMD16<Float>(), a3 = SIMD16<Float>()
        var a4 = SIMD16<Float>(), a5 = SIMD16<Float>(), a6 = SIMD16<Float>(), a7 = SIMD16<Float>()
        var c0 = SIMD16<Float>(), c1 = SIMD16<Float>(), c2 = SIMD16<Float>(), c3 = SIMD16<Float>()
        var c4 = SIMD16<Float>(), c5 = SIMD16<Float>(), c6 = SIMD16<Float>(), c7 = SIMD16<Float>()
        for kh in 0..<g.kernelHeight { for kw in 0..<g.kernelWidth {
            let tap = kh &* g.kernelWidth &+ kw
            let dy = kh &* g.dilationH &- g.padTop, dx = kw &* g.dilationW &- g.padLeft
            let inside0 = lanes0.inside(dy: dy, dx: dx, height: g.inHeight, width: g.inWidth)
            let inside1 = lanes1.inside(dy: dy, dx: dx, height: g.inHeight, width: g.inWidth)
            var start = j0 &+ dy &* g.inWidth &+ dx
            var wp = weights + tap * channelBlock
            for _ in 0..<g.inChannels {
                let v = ShiftedLanes.load(input, start, readable: readable, inside: inside0)
                let u = ShiftedLanes.load(input, start &+ 16, readable: readable, inside: inside1)
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
                start &+= pixels
                wp += taps * channelBlock
            }
        } }
        storeBlock(a0, a1, a2, a3, a4, a5, a6, a7, j: j0, count: 16, store)
        storeBlock(c0, c1, c2, c3, c4, c5, c6, c7, j: j1, count: count1, store)
    }

    /// Output channels 0..<8 of the pixel block at `j` (its first `count` pixels) through `store`.
    @inline(__always)
    static func storeBlock(_ a0: SIMD16<Float>, _ a1: SIMD16<Float>, _ a2: SIMD16<Float>, _ a3: SIMD16<Float>,
                           _ a4: SIMD16<Float>, _ a5: SIMD16<Float>, _ a6: SIMD16<Float>, _ a7: SIMD16<Float>,
                           j: Int, count: Int, _ store: (SIMD16<Float>, Int, Int, Int) -> Void) {
        store(a0, 0, j, count); store(a1, 1, j, count); store(a2, 2, j, count); store(a3, 3, j, count)
        store(a4, 4, j, count); store(a5, 5, j, count); store(a6, 6, j, count); store(a7, 7, j, count)
    }
}
