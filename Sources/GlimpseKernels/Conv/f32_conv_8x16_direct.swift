/// Direct convolution for stride-1 convolutions whose output is as wide as the input
/// (`ConvGeometry.isShiftedPlane`) and whose reduction is short (Cin·KH·KW ≤ `maxPatch`), such as
/// the first layers of small classifiers. There a GEMM spends most of its time packing panels and
/// entering tiles for a few K steps. Here each block of 16 output pixels keeps 8 output channels in
/// registers and adds every tap of every input channel straight from the shifted input plane: one
/// masked vector load feeds 8 fused multiply-adds.
public enum f32_conv_8x16_direct {
    /// Output channels per register block.
    public static let channelBlock = 8
    /// Largest Cin·KH·KW this path takes.
    public static let maxPatch = 64

    /// 1×1 kernels stay with the GEMM: with a single tap there are no shifted loads to share, and
    /// its 6×32 tiles reuse each load better (MobileNetV2 ran 10–15 % slower with them here).
    public static func applies(_ g: ConvGeometry) -> Bool {
        g.isShiftedPlane && g.patchSize <= maxPatch && g.kernelHeight * g.kernelWidth > 1
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
    public static func run(input: UnsafePointer<Float>, readable: Range<Int>, weights: UnsafePointer<Float>, m: Int,
                           geometry g: ConvGeometry, output: UnsafeMutablePointer<Float>, epilogue: GemmEpilogue,
                           blocks: Range<Int>) {
        let taps = g.kernelHeight * g.kernelWidth, k = g.patchSize
        let pixels = g.inPixels, n = g.outPixels
        let channelBlocks = (m + channelBlock - 1) / channelBlock
        for block in blocks {
            let j0 = block * 16
            let count = min(16, n - j0)
            let lanes = ShiftedLanes(first: j0, count: count, width: g.inWidth)
            for cb in 0..<channelBlocks {
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
                let rowsHere = min(channelBlock, m - first)
                @inline(__always)
                func finish(_ acc: SIMD16<Float>, _ c: Int) {
                    guard c < rowsHere else { return }
                    epilogue.store(acc, row: first + c, col: j0, lanes: count, to: output + (first + c) * n + j0)
                }
                finish(a0, 0)
                finish(a1, 1)
                finish(a2, 2)
                finish(a3, 3)
                finish(a4, 4)
                finish(a5, 5)
                finish(a6, 6)
                finish(a7, 7)
            }
        }
    }
}
