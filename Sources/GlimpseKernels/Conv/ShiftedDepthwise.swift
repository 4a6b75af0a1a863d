/// Depthwise convolution of small "same" planes (stride 1, output as wide as the input:
/// `ConvGeometry.isShiftedPlane`), such as MobileNet's and EfficientNet's 7×7 to 28×28 stages.
/// There the phase-plane path copies and compacts every plane, which costs more than the few
/// taps it computes. Here each block of 16 output pixels keeps 8 channels in registers: the
/// block's tap mask is computed once per tap and serves 8 masked loads and 8 fused multiply-adds
/// straight from the input planes, with no copy.
public enum ShiftedDepthwise {
    /// Channels per register block.
    public static let channelBlock = 8
    /// Largest output plane (pixels) this path takes; larger planes go through `DepthwisePlane`,
    /// whose row sweep is faster there.
    public static let maxPixels = 32 * 32

    public static func applies(_ g: ConvGeometry) -> Bool {
        g.isShiftedPlane && g.outPixels <= maxPixels
    }

    /// Floats of scratch one `run` needs: per 16-pixel block its lane rows and columns.
    public static func scratchCount(_ g: ConvGeometry) -> Int {
        32 * ((g.outPixels + 15) / 16) + 16
    }

    /// Floats of `pack`'s output for `channels` channels of `taps` taps.
    public static func packedCount(channels: Int, taps: Int) -> Int {
        (channels + channelBlock - 1) / channelBlock * taps * channelBlock
    }

    /// Packs depthwise weights [C][taps] as blocks of 8 channels, tap-major: [block][tap][8]. A
    /// short last block repeats its last channel (computed, never stored) instead of branching.
    public static func pack(_ weights: UnsafePointer<Float>, channels: Int, taps: Int,
                            into dst: UnsafeMutablePointer<Float>) {
        for block in 0..<(channels + channelBlock - 1) / channelBlock {
            let c0 = block * channelBlock
            for tap in 0..<taps {
                for i in 0..<channelBlock {
                    dst[(block * taps + tap) * channelBlock + i] = weights[min(c0 + i, channels - 1) * taps + tap]
                }
            }
        }
    }

    /// Channels `channels` of one image, the 16-pixel blocks `blocks` (every block by default:
    /// `(outPixels + 15) / 16` of them). `input` is the image ([C, H, W]) and
    /// `readable` the offsets from it that may be read (see `Im2colB.readable`); `weights` is
    /// `pack`'s output for all C channels, and `channels` starts at a multiple of 8; `output` the
    /// image's [C, OH·OW]. The epilogue applies with row = channel −
    /// `channels.lowerBound` and column = pixel, and adds the bias. `scratch` holds `scratchCount(g)` floats.
    public static func run(input: UnsafePointer<Float>, readable: Range<Int>, weights: UnsafePointer<Float>,
                           channels: Range<Int>, blocks: Range<Int>? = nil, geometry g: ConvGeometry,
                           output: UnsafeMutablePointer<Float>, epilogue: GemmEpilogue,
                           scratch: UnsafeMutablePointer<Float>) {
        let taps = g.kernelHeight * g.kernelWidth, pixels = g.inPixels, n = g.outPixels
        let blocks = blocks ?? 0..<(n + 15) / 16
        guard !channels.isEmpty, !blocks.isEmpty else { return }
        // Per block, its lanes' rows and columns (computed once for all channels: the division in
        // `ShiftedLanes` is a long dependency chain).
        let table = scratch
        for block in blocks {
            let lanes = ShiftedLanes(first: block * 16, count: min(16, n - block * 16), width: g.inWidth)
            let entry = table + 32 * (block - blocks.lowerBound)
            UnsafeMutableRawPointer(entry).storeBytes(of: lanes.rows, as: SIMD16<Float>.self)
            UnsafeMutableRawPointer(entry + 16).storeBytes(of: lanes.cols, as: SIMD16<Float>.self)
        }
        var c0 = channels.lowerBound
        while c0 < channels.upperBound {
            let count = min(channelBlock, channels.upperBound - c0)
            // Channel i of the block reads plane c0 + min(i, count − 1): a short last block repeats
            // its last channel instead of branching, and the repeats are not stored.
            @inline(__always) func plane(_ i: Int) -> Int { (c0 &+ Swift.min(i, count &- 1)) &* pixels }
            runBlocks(input: input, readable: readable, packed: weights + c0 / channelBlock * taps * channelBlock,
                      lanes: UnsafePointer(table),
                      planes: (plane(0), plane(1), plane(2), plane(3), plane(4), plane(5), plane(6), plane(7)),
                      c0: c0, count: count, pixels: (blocks.lowerBound * 16)..<min(n, blocks.upperBound * 16),
                      geometry: g, output: output,
                      epilogue: epilogue.offset(row: c0 - channels.lowerBound, col: 0))
            c0 += count
        }
    }

    /// One block of up to 8 channels over output pixels `pixels` (starting at a 16-pixel block,
    /// whose lane table entry is the table's first); the epilogue's row 0 is channel `c0`.
    @inline(__always)
    private static func runBlocks(input: UnsafePointer<Float>, readable: Range<Int>, packed: UnsafePointer<Float>,
                                  lanes table: UnsafePointer<Float>,
                                  planes: (Int, Int, Int, Int, Int, Int, Int, Int), c0: Int, count: Int,
                                  pixels: Range<Int>, geometry g: ConvGeometry, output: UnsafeMutablePointer<Float>,
                                  epilogue: GemmEpilogue) {
        let n = g.outPixels
        let (p0, p1, p2, p3, p4, p5, p6, p7) = planes
        var j0 = pixels.lowerBound
        while j0 < pixels.upperBound {
            let lanesHere = min(16, pixels.upperBound - j0)
            let entry = UnsafeRawPointer(table + 2 * (j0 - pixels.lowerBound))
            let lanes = ShiftedLanes(rows: entry.loadUnaligned(as: SIMD16<Float>.self),
                                     cols: entry.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self))
            var a0 = SIMD16<Float>(), a1 = SIMD16<Float>(), a2 = SIMD16<Float>(), a3 = SIMD16<Float>()
            var a4 = SIMD16<Float>(), a5 = SIMD16<Float>(), a6 = SIMD16<Float>(), a7 = SIMD16<Float>()
            for kh in 0..<g.kernelHeight {
                let dy = kh &* g.dilationH &- g.padTop
                let rowInside = lanes.rowInside(dy: dy, height: g.inHeight)
                for kw in 0..<g.kernelWidth {
                    let wt = packed + (kh &* g.kernelWidth &+ kw) &* channelBlock
                    let dx = kw &* g.dilationW &- g.padLeft
                    let inside = rowInside .& lanes.colInside(dx: dx, width: g.inWidth)
                    let start = j0 &+ dy &* g.inWidth &+ dx
                    if p0 &+ start >= readable.lowerBound && p7 &+ start &+ 16 <= readable.upperBound {
                        // All 8 whole-vector loads stay in the readable memory (nearly always).
                        a0.addProduct(SIMD16<Float>().replacing(with: UnsafeRawPointer(input + (p0 &+ start)).loadUnaligned(as: SIMD16<Float>.self), where: inside),
                                        SIMD16(repeating: wt[0]))
                        a1.addProduct(SIMD16<Float>().replacing(with: UnsafeRawPointer(input + (p1 &+ start)).loadUnaligned(as: SIMD16<Float>.self), where: inside),
                                        SIMD16(repeating: wt[1]))
                        a2.addProduct(SIMD16<Float>().replacing(with: UnsafeRawPointer(input + (p2 &+ start)).loadUnaligned(as: SIMD16<Float>.self), where: inside),
                                        SIMD16(repeating: wt[2]))
                        a3.addProduct(SIMD16<Float>().replacing(with: UnsafeRawPointer(input + (p3 &+ start)).loadUnaligned(as: SIMD16<Float>.self), where: inside),
                                        SIMD16(repeating: wt[3]))
                        a4.addProduct(SIMD16<Float>().replacing(with: UnsafeRawPointer(input + (p4 &+ start)).loadUnaligned(as: SIMD16<Float>.self), where: inside),
                                        SIMD16(repeating: wt[4]))
                        a5.addProduct(SIMD16<Float>().replacing(with: UnsafeRawPointer(input + (p5 &+ start)).loadUnaligned(as: SIMD16<Float>.self), where: inside),
                                        SIMD16(repeating: wt[5]))
                        a6.addProduct(SIMD16<Float>().replacing(with: UnsafeRawPointer(input + (p6 &+ start)).loadUnaligned(as: SIMD16<Float>.self), where: inside),
                                        SIMD16(repeating: wt[6]))
                        a7.addProduct(SIMD16<Float>().replacing(with: UnsafeRawPointer(input + (p7 &+ start)).loadUnaligned(as: SIMD16<Float>.self), where: inside),
                                        SIMD16(repeating: wt[7]))
                    } else {
                        a0.addProduct(ShiftedLanes.load(input, p0 &+ start, readable: readable, inside: inside), SIMD16(repeating: wt[0]))
                        a1.addProduct(ShiftedLanes.load(input, p1 &+ start, readable: readable, inside: inside), SIMD16(repeating: wt[1]))
                        a2.addProduct(ShiftedLanes.load(input, p2 &+ start, readable: readable, inside: inside), SIMD16(repeating: wt[2]))
                        a3.addProduct(ShiftedLanes.load(input, p3 &+ start, readable: readable, inside: inside), SIMD16(repeating: wt[3]))
                        a4.addProduct(ShiftedLanes.load(input, p4 &+ start, readable: readable, inside: inside), SIMD16(repeating: wt[4]))
                        a5.addProduct(ShiftedLanes.load(input, p5 &+ start, readable: readable, inside: inside), SIMD16(repeating: wt[5]))
                        a6.addProduct(ShiftedLanes.load(input, p6 &+ start, readable: readable, inside: inside), SIMD16(repeating: wt[6]))
                        a7.addProduct(ShiftedLanes.load(input, p7 &+ start, readable: readable, inside: inside), SIMD16(repeating: wt[7]))
                    }
                }
            }
            @inline(__always)
            func finish(_ acc: SIMD16<Float>, _ i: Int) {
                // Lane by lane at a short block: a whole vector would run into the next channel's plane.
                guard i < count else { return }
                epilogue.store(acc, row: i, col: j0, lanes: lanesHere, to: output + (c0 + i) * n + j0)
            }
            finish(a0, 0)
            finish(a1, 1)
            finish(a2, 2)
            finish(a3, 3)
            finish(a4, 4)
            finish(a5, 5)
            finish(a6, 6)
            finish(a7, 7)
            j0 += 16
        }
    }
}
