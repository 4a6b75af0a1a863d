/// Depthwise convolution of small "same" planes (stride 1, output as wide as the input:
/// `ConvGeometry.isShiftedPlane`), such as MobileNet's and EfficientNet's 7×7 to 28×28 stages.
/// There the phase-plane path copies and compacts every plane, which costs more than the few
/// taps it computes. Here each block of 16 output pixels keeps 8 channels in registers: the
/// block's tap mask is computed once per tap and serves 8 masked loads and 8 fused multiply-adds
/// straight from the input planes, with no copy.
public enum f32_dwconv_8x16_same {
    /// Channels per register block.
    public static let channelBlock = 8
    /// Largest output plane (pixels) this path takes; larger planes go through `DepthwisePlane`,
    /// whose row sweep is faster there.
    public static let maxPixels = 32 * 32

    public static func applies(_ g: ConvGeometry) -> Bool {
        g.isShiftedPlane && g.outPixels <= maxPixels
    }

    /// Floats of scratch one `run` needs: per 16-pixel block, per tap, which lanes read inside the
    /// plane.
    public static func scratchCount(_ g: ConvGeometry) -> Int {
        16 * g.kernelHeight * g.kernelWidth * ((g.outPixels + 15) / 16) + 16
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
    /// `readable` the offsets from it that may be read (see `Im2colPanelSource.readable`); `weights` is
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
        // Per block and tap, the lanes that read inside the plane, as 1 / 0 floats (computed once
        // for all channels: from the lanes' rows and columns, a chain of a conversion, an add and
        // two compares per tap that, left in the tap loop, cost several times its loads and FMAs;
        // a float compare, where an integer one compiled to a loop over the lanes).
        let table = UnsafeMutableRawPointer(scratch)
        for block in blocks {
            let lanes = ShiftedLanes(first: block * 16, count: min(16, n - block * 16), width: g.inWidth)
            var entry = table + 64 * taps * (block - blocks.lowerBound)
            for kh in 0..<g.kernelHeight {
                let rowInside = lanes.rowInside(dy: kh * g.dilationH - g.padTop, height: g.inHeight)
                for kw in 0..<g.kernelWidth {
                    let inside = rowInside .& lanes.colInside(dx: kw * g.dilationW - g.padLeft, width: g.inWidth)
                    entry.storeBytes(of: SIMD16<Float>().replacing(with: 1, where: inside), as: SIMD16<Float>.self)
                    entry += 64
                }
            }
        }
        var c0 = channels.lowerBound
        while c0 < channels.upperBound {
            let count = min(channelBlock, channels.upperBound - c0)
            // Channel i of the block reads plane c0 + min(i, count − 1): a short last block repeats
            // its last channel instead of branching, and the repeats are not stored.
            @inline(__always) func plane(_ i: Int) -> Int { (c0 &+ Swift.min(i, count &- 1)) &* pixels }
            runBlocks(input: input, readable: readable, packed: weights + c0 / channelBlock * taps * channelBlock,
                      masks: UnsafeRawPointer(table),
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
                                  masks table: UnsafeRawPointer,
                                  planes: (Int, Int, Int, Int, Int, Int, Int, Int), c0: Int, count: Int,
                                  pixels: Range<Int>, geometry g: ConvGeometry, output: UnsafeMutablePointer<Float>,
                                  epilogue: GemmEpilogue) {
        let n = g.outPixels
        let (p0, p1, p2, p3, p4, p5, p6, p7) = planes
        var j0 = pixels.lowerBound
        while j0 < pixels.upperBound {
            let lanesHere = min(16, pixels.upperBound - j0)
            let masks = table + 4 * g.kernelHeight * g.kernelWidth * (j0 - pixels.lowerBound)
            var a0 = SIMD16<Float>(), a1 = SIMD16<Float>(), a2 = SIMD16<Float>(), a3 = SIMD16<Float>()
            var a4 = SIMD16<Float>(), a5 = SIMD16<Float>(), a6 = SIMD16<Float>(), a7 = SIMD16<Float>()
            // Whether every tap's 8 whole-vector loads stay in the readable memory (nearly always),
            // decided once per block: a check per tap and plane compiled to a compare and branch
            // around every load, three times the instructions of the FMAs themselves.
            let first = j0 &- g.padTop &* g.inWidth &- g.padLeft
            let last = first &+ (g.kernelHeight &- 1) &* g.dilationH &* g.inWidth &+ (g.kernelWidth &- 1) &* g.dilationW
            if p0 &+ first >= readable.lowerBound && p7 &+ last &+ 16 <= readable.upperBound {
                let b0 = UnsafeRawPointer(input + (p0 &+ j0)), b1 = UnsafeRawPointer(input + (p1 &+ j0))
                let b2 = UnsafeRawPointer(input + (p2 &+ j0)), b3 = UnsafeRawPointer(input + (p3 &+ j0))
                let b4 = UnsafeRawPointer(input + (p4 &+ j0)), b5 = UnsafeRawPointer(input + (p5 &+ j0))
                let b6 = UnsafeRawPointer(input + (p6 &+ j0)), b7 = UnsafeRawPointer(input + (p7 &+ j0))
                for kh in 0..<g.kernelHeight {
                    let dy = kh &* g.dilationH &- g.padTop
                    for kw in 0..<g.kernelWidth {
                        let t = kh &* g.kernelWidth &+ kw
                        let wt = packed + t &* channelBlock
                        let dx = kw &* g.dilationW &- g.padLeft
                        let inside = masks.load(fromByteOffset: t &* 64, as: SIMD16<Float>.self) .> 0
                        let offset = (dy &* g.inWidth &+ dx) &* 4
                        @inline(__always) func tap(_ base: UnsafeRawPointer) -> SIMD16<Float> {
                            SIMD16<Float>().replacing(with: base.loadUnaligned(fromByteOffset: offset, as: SIMD16<Float>.self), where: inside)
                        }
                        a0.addProduct(tap(b0), SIMD16(repeating: wt[0]))
                        a1.addProduct(tap(b1), SIMD16(repeating: wt[1]))
                        a2.addProduct(tap(b2), SIMD16(repeating: wt[2]))
                        a3.addProduct(tap(b3), SIMD16(repeating: wt[3]))
                        a4.addProduct(tap(b4), SIMD16(repeating: wt[4]))
                        a5.addProduct(tap(b5), SIMD16(repeating: wt[5]))
                        a6.addProduct(tap(b6), SIMD16(repeating: wt[6]))
                        a7.addProduct(tap(b7), SIMD16(repeating: wt[7]))
                    }
                }
            } else {
                // Near the ends of the tensor: loads that would leave the readable memory go lane by lane.
                for kh in 0..<g.kernelHeight {
                    let dy = kh &* g.dilationH &- g.padTop
                    for kw in 0..<g.kernelWidth {
                        let t = kh &* g.kernelWidth &+ kw
                        let wt = packed + t &* channelBlock
                        let dx = kw &* g.dilationW &- g.padLeft
                        let inside = masks.load(fromByteOffset: t &* 64, as: SIMD16<Float>.self) .> 0
                        let start = j0 &+ dy &* g.inWidth &+ dx
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
            let out = output + (c0 &* n &+ j0)
            if lanesHere == 16 {
                // Whole vectors, in line, in a loop over the channels: an out-of-line store per
                // channel took a third of a 3×3 layer's time in calls and argument shuffles, and
                // eight unrolled copies of the epilogue (swish included) made this function so
                // large that the optimizer stopped inlining into it, the stores included.
                var tile = (a0, a1, a2, a3, a4, a5, a6, a7)
                withUnsafeBytes(of: &tile) { raw in
                    for i in 0..<count {
                        storeWhole(raw.load(fromByteOffset: i &* 64, as: SIMD16<Float>.self), i, out: out, n: n, col: j0,
                                   epilogue: epilogue)
                    }
                }
            } else {
                // Lane by lane at a short block: a whole vector would run into the next channel's plane.
                storePartial((a0, a1, a2, a3, a4, a5, a6, a7), count: count, lanes: lanesHere, col: j0,
                             epilogue: epilogue, output: out, planeStride: n)
            }
            j0 += 16
        }
    }

    /// One channel's whole vector of a block through the epilogue. `@_transparent`: with
    /// `@inline(__always)` (and as a local function before) the optimizer still emitted one call
    /// per channel, passing the vector in four xmm registers.
    @_transparent
    private static func storeWhole(_ acc: SIMD16<Float>, _ i: Int, out: UnsafeMutablePointer<Float>, n: Int, col: Int,
                                   epilogue: GemmEpilogue) {
        UnsafeMutableRawPointer(out + i &* n).storeBytes(of: epilogue.apply(acc, row: i, col: col), as: SIMD16<Float>.self)
    }

    /// The first `lanes` pixels of a short block, for the first `count` of 8 channels.
    @inline(never)
    private static func storePartial(_ acc: (SIMD16<Float>, SIMD16<Float>, SIMD16<Float>, SIMD16<Float>,
                                             SIMD16<Float>, SIMD16<Float>, SIMD16<Float>, SIMD16<Float>),
                                     count: Int, lanes: Int, col: Int, epilogue: GemmEpilogue,
                                     output: UnsafeMutablePointer<Float>, planeStride: Int) {
        // The epilogue in vector form, reading and writing only the block's lanes.
        withUnsafeBytes(of: acc) { raw in
            for i in 0..<count {
                epilogue.store(raw.loadUnaligned(fromByteOffset: i * 64, as: SIMD16<Float>.self), row: i, col: col, lanes: lanes,
                               to: output + i * planeStride)
            }
        }
    }
}
