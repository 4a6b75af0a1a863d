#if GLIMPSE_VNNI
import CGlimpseSIMD

/// Depthwise int8 convolution in integers: u8 input, s8 weights, s32 sums, requantized in the store.
///
/// Lanes are 16 output pixels of one channel plane. Each plane is copied into a padded u8 plane
/// (padding = the input zero point, so Σ w·(x − zx) = Σ w·x − zx·Σw over all taps, the second
/// term folded into the bias). For a tile of 16 output pixels, one kernel row `ky` takes 128
/// bytes of the padded plane and a byte permutation (`vpermt2b`) gathers, for each lane, the four
/// inputs of taps kx = 4c ..< 4c + 4, which `vpdpbusd` multiplies by the four weights of that row
/// (zero past KW): a 3×3 window is three permutes and three `vpdpbusd` per 16 outputs, at any
/// stride, with no conversion to float.
///
/// The tiles follow the output plane in order: within a row when it is 16 pixels or wider,
/// across rows when it is narrower (a 7×7 plane fills 16 lanes from three rows), so small planes
/// keep their lanes busy without a channel-blocked layout (the int8 graph is NCHW throughout).
/// The permutations depend only on the geometry and are built once (`init`).
public struct QU8DepthwiseVNNI: @unchecked Sendable {
    public let geometry: ConvGeometry
    public let inputZeroPoint: UInt8
    /// Padded plane rows and row length in bytes.
    let rows: Int
    let planeWidth: Int
    /// Four-tap chunks per kernel row.
    public let chunks: Int
    /// Per tile: first output pixel, pixel count, the tile's offset in the padded plane, and the
    /// first of its `chunks` permutations in `patterns`.
    let tiles: [SIMD4<Int32>]
    /// Byte permutations, 64 bytes each (deduplicated across tiles).
    let patterns: [SIMD64<UInt8>]
    /// Narrow planes (`planeWidth` ≤ 32) are copied 64 padded bytes at a time: per 64 bytes, the input
    /// run they take (first byte, count) and which of them are input (the rest is padding), with
    /// `runPatterns` placing the run's bytes. Empty for wider planes, which are copied row by row.
    let runs: [SIMD4<Int64>]
    let runPatterns: [SIMD64<UInt8>]
    /// Whether most tiles come in fours of full, consecutive tiles (planes narrower than 16, and rows
    /// of a multiple of 64 pixels or long ones), which the 3×3 kernel then stores packed. Elsewhere (56
    /// or 28 wide, 7×7) the packed kernel's checks cost more than it saves.
    let packsFourTiles: Bool

    /// `nil` when one output pixel's taps of a kernel row span more than 128 bytes.
    public init?(geometry g: ConvGeometry, inputZeroPoint: UInt8) {
        let reach = (g.kernelWidth - 1) * g.dilationW
        guard reach + 3 < 128, g.kernelHeight >= 1, g.kernelWidth >= 1, g.outPixels > 0 else { return nil }
        geometry = g
        self.inputZeroPoint = inputZeroPoint
        rows = max((g.outHeight - 1) * g.strideH + (g.kernelHeight - 1) * g.dilationH + 1, g.padTop + g.inHeight)
        let pw = max((g.outWidth - 1) * g.strideW + reach + 1, g.padLeft + g.inWidth)
        planeWidth = pw
        let chunks = (g.kernelWidth + 3) / 4
        self.chunks = chunks
        var tiles: [SIMD4<Int32>] = []
        var patterns: [SIMD64<UInt8>] = []
        var known: [[UInt8]: Int] = [:]
        let ow = g.outWidth
        var p = 0
        while p < g.outPixels {
            let base = (p / ow) * g.strideH * pw + (p % ow) * g.strideW
            // Grow the tile while every lane's taps stay within the 128 bytes from `base`.
            var offsets: [Int] = []
            while offsets.count < 16 && p + offsets.count < g.outPixels {
                let q = p + offsets.count
                if ow >= 16 && q / ow != p / ow { break }
                let off = (q / ow) * g.strideH * pw + (q % ow) * g.strideW - base
                if off + reach > 127 { break }
                offsets.append(off)
            }
            var bytes = [UInt8](repeating: 0, count: 64 * chunks)
            for c in 0..<chunks {
                for (j, off) in offsets.enumerated() {
                    for i in 0..<4 {
                        let kx = min(4 * c + i, g.kernelWidth - 1)   // past KW: any valid byte (weight 0)
                        bytes[64 * c + 4 * j + i] = UInt8(off + kx * g.dilationW)
                    }
                }
            }
            let index: Int
            if let found = known[bytes] {
                index = found
            } else {
                index = patterns.count
                known[bytes] = index
                for c in 0..<chunks {
                    var v = SIMD64<UInt8>()
                    for b in 0..<64 { v[b] = bytes[64 * c + b] }
                    patterns.append(v)
                }
            }
            tiles.append(SIMD4(Int32(p), Int32(offsets.count), Int32(base), Int32(index)))
            p += offsets.count
        }
        self.tiles = tiles
        self.patterns = patterns
        (runs, runPatterns) = Self.planeRuns(g, rows: rows, planeWidth: pw)
        let packed = tiles.withUnsafeBufferPointer { tb -> Int in
            guard let t = tb.baseAddress else { return 0 }
            var packed = 0, i = 0
            while i < tb.count {
                if startsFourFullTiles(t, i, tb.count) {
                    packed += 4
                    i += 4
                } else {
                    i += 1
                }
            }
            return packed
        }
        packsFourTiles = 2 * packed >= tiles.count
    }

    /// The 64-byte pieces of the padded plane for `copyPlaneRuns` (none when the plane is wider than
    /// 32 bytes: its rows are long enough to copy one by one). The input bytes of any 64 padded bytes
    /// are consecutive in the input, since padding only adds bytes between them.
    static func planeRuns(_ g: ConvGeometry, rows: Int, planeWidth pw: Int) -> ([SIMD4<Int64>], [SIMD64<UInt8>]) {
        guard pw <= 32 else { return ([], []) }
        var runs: [SIMD4<Int64>] = [], patterns: [SIMD64<UInt8>] = []
        let total = rows * pw
        var q = 0
        while q < total {
            var first = -1, interior: UInt64 = 0
            var pattern = SIMD64<UInt8>()
            for b in 0..<64 where q + b < total {
                let iy = (q + b) / pw - g.padTop, ix = (q + b) % pw - g.padLeft
                guard iy >= 0 && iy < g.inHeight && ix >= 0 && ix < g.inWidth else { continue }
                let index = iy * g.inWidth + ix
                if first < 0 { first = index }
                guard index - first < 64 else { return ([], []) }
                pattern[b] = UInt8(index - first)
                interior |= 1 << UInt64(b)
            }
            let count = first < 0 ? 0 : Int(pattern.max()) + 1
            runs.append(SIMD4(Int64(max(first, 0)), Int64(count), Int64(bitPattern: interior), 0))
            patterns.append(pattern)
            q += 64
        }
        return (runs, patterns)
    }

    /// Bytes from one padded plane to the next in the scratch: the plane and 128 bytes of slack for
    /// the last loads (and for the last 64-byte piece of `copyPlaneRuns`), to a multiple of 64.
    var planeStride: Int { (rows * planeWidth + 128 + 63) / 64 * 64 }
    /// Scratch bytes per thread: one padded plane, or two for narrow planes (`runChannels` fills one
    /// while it reads the other).
    public var scratchBytes: Int { runs.isEmpty ? planeStride : 2 * planeStride }

    /// Weight words per channel: `[KH][chunks]`, four s8 taps each (zeros past KW).
    public var wordsPerChannel: Int { geometry.kernelHeight * chunks }

    /// Packs `w` `[C][KH][KW]` into `[C][KH][(KW + 3) / 4]` words (the layout does not depend on the
    /// input size, so operators pack once at load).
    public static func packWeights(_ w: UnsafePointer<Int8>, channels: Int, kernelHeight: Int, kernelWidth: Int) -> [Int32] {
        let chunks = (kernelWidth + 3) / 4
        var out = [Int32](repeating: 0, count: channels * kernelHeight * chunks)
        for ch in 0..<channels {
            for ky in 0..<kernelHeight {
                for c in 0..<chunks {
                    var word: UInt32 = 0
                    for i in 0..<4 where 4 * c + i < kernelWidth {
                        let v = w[(ch * kernelHeight + ky) * kernelWidth + 4 * c + i]
                        word |= UInt32(UInt8(bitPattern: v)) << (8 * UInt32(i))
                    }
                    out[(ch * kernelHeight + ky) * chunks + c] = Int32(bitPattern: word)
                }
            }
        }
        return out
    }

    /// Channels `channels` of one image: `x` is `[C][H][W]`, `w` the packed words, `y` `[C][OH][OW]`.
    /// `rq.bias` must hold the model's bias minus zx·Σw per channel.
    public func runChannels(_ channels: Range<Int>, x: UnsafePointer<UInt8>, w: UnsafePointer<Int32>, y: UnsafeMutablePointer<UInt8>,
                            requant rq: RequantPointers, scratch: UnsafeMutablePointer<UInt8>) {
        let g = geometry
        // Narrow planes (copied by `copyPlaneRuns`) use two padded planes, filled one channel ahead:
        // the tiles of channel c then read a plane whose stores are long done (reading a plane just
        // stored stalls on store forwarding). Wide planes are copied row by row into one.
        let ahead = !runs.isEmpty
        let second = ahead ? scratch + planeStride : scratch
        guard let firstChannel = channels.first else { return }
        if ahead {
            copyPlaneRuns(x + firstChannel * g.inPixels, scratch)   // writes the padding too
        } else {
            fillPadding(scratch)
        }
        tiles.withUnsafeBufferPointer { tiles in
            patterns.withUnsafeBufferPointer { patterns in
                guard let t = tiles.baseAddress, let pat = patterns.baseAddress else { return }
                for c in channels {
                    let plane = (c - firstChannel) & 1 == 0 ? scratch : second
                    if !ahead {
                        copyPlane(x + c * g.inPixels, plane)
                    } else if c + 1 < channels.upperBound {
                        copyPlaneRuns(x + (c + 1) * g.inPixels, plane == scratch ? second : scratch)
                    }
                    if g.kernelHeight == 3 && chunks == 1 {
                        if packsFourTiles {
                            qu8_dwconv_16p_3rows_packed_avx512vnni(tiles: t, count: tiles.count, patterns: pat, plane: plane,
                                                                   rowStep: g.dilationH * planeWidth, w: w + c * 3,
                                                                   y: y + c * g.outPixels, channel: c, requant: rq)
                        } else {
                            qu8_dwconv_16p_3rows_avx512vnni(tiles: t, count: tiles.count, patterns: pat, plane: plane,
                                                            rowStep: g.dilationH * planeWidth, w: w + c * 3,
                                                            y: y + c * g.outPixels, channel: c, requant: rq)
                        }
                    } else {
                        qu8_dwconv_16p_avx512vnni(tiles: t, count: tiles.count, patterns: pat, chunks: chunks, kernelHeight: g.kernelHeight,
                                                  plane: plane, rowStep: g.dilationH * planeWidth, w: w + c * wordsPerChannel,
                                                  y: y + c * g.outPixels, channel: c, requant: rq)
                    }
                }
            }
        }
    }

    /// Sets the padding of the scratch plane (and its slack) to the input zero point; `copyPlane`
    /// writes only the input's part, so this holds for every channel.
    func fillPadding(_ scratch: UnsafeMutablePointer<UInt8>) {
        let g = geometry
        let z = inputZeroPoint
        scratch.initialize(repeating: z, count: g.padTop * planeWidth)
        let below = g.padTop + g.inHeight
        (scratch + below * planeWidth).initialize(repeating: z, count: (rows - below) * planeWidth + 128)
        let end = g.padLeft + g.inWidth
        for iy in 0..<g.inHeight {
            let row = scratch + (iy + g.padTop) * planeWidth
            for i in 0..<g.padLeft { row[i] = z }
            for i in end..<planeWidth { row[i] = z }
        }
    }

    /// Copies one input plane into the interior of the padded plane.
    @inline(__always)
    func copyPlane(_ x: UnsafePointer<UInt8>, _ scratch: UnsafeMutablePointer<UInt8>) {
        let g = geometry
        let width = g.inWidth
        for iy in 0..<g.inHeight {
            let src = x + iy * width
            let dst = scratch + (iy + g.padTop) * planeWidth + g.padLeft
            var ix = 0
            while ix < width {
                glimpse_copy_u8_first64(dst + ix, src + ix, Int32(min(64, width - ix)))
                ix += 64
            }
        }
    }
}

extension QU8DepthwiseVNNI {
    /// `copyPlane` for narrow planes: the whole padded plane, padding included, 64 bytes per masked
    /// load, byte permutation and store (a 7×7 plane: two pieces, against seven masked row copies).
    @inline(__always)
    func copyPlaneRuns(_ x: UnsafePointer<UInt8>, _ scratch: UnsafeMutablePointer<UInt8>) {
        runs.withUnsafeBufferPointer { runs in
            runPatterns.withUnsafeBufferPointer { patterns in
                for i in 0..<runs.count {
                    let r = runs[i]
                    glimpse_expand_run_u8_64(scratch + 64 * i, x + Int(r[0]), Int32(r[1]), unsafeBitCast(patterns[i], to: SIMD8<Int64>.self),
                                             UInt64(bitPattern: r[2]), inputZeroPoint)
                }
            }
        }
    }
}

@inline(__always)
func load64(_ p: UnsafePointer<UInt8>) -> SIMD8<Int64> {
    UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Int64>.self)
}

/// The inputs of one kernel row for all 16 lanes: 128 bytes from `row`, permuted.
@inline(__always)
func gatherTaps(_ row: UnsafePointer<UInt8>, _ pattern: SIMD8<Int64>) -> SIMD16<Int32> {
    unsafeBitCast(glimpse_permute2_u8_512(load64(row), pattern, load64(row + 64)), to: SIMD16<Int32>.self)
}

/// Any window: `kernelHeight` rows of `chunks` four-tap words per tile.
public func qu8_dwconv_16p_avx512vnni(tiles: UnsafePointer<SIMD4<Int32>>, count: Int, patterns: UnsafePointer<SIMD64<UInt8>>,
                                      chunks: Int, kernelHeight: Int, plane: UnsafePointer<UInt8>, rowStep: Int,
                                      w: UnsafePointer<Int32>, y: UnsafeMutablePointer<UInt8>, channel: Int, requant rq: RequantPointers) {
    for i in 0..<count {
        let t = tiles[i]
        var acc = SIMD16<Int32>()
        var row = plane + Int(t[2])
        for ky in 0..<kernelHeight {
            for c in 0..<chunks {
                let pattern = unsafeBitCast(patterns[Int(t[3]) + c], to: SIMD8<Int64>.self)
                acc = dpbusd(acc, gatherTaps(row, pattern), SIMD16<Int32>(repeating: w[ky * chunks + c]))
            }
            row += rowStep
        }
        RequantPointers.store(rq.store16(acc, channel: channel), to: y + Int(t[0]), count: Int(t[1]))
    }
}

/// Three kernel rows of up to four taps (3×3 at any stride): the weight words stay in registers.
public func qu8_dwconv_16p_3rows_avx512vnni(tiles: UnsafePointer<SIMD4<Int32>>, count: Int, patterns: UnsafePointer<SIMD64<UInt8>>,
                                            plane: UnsafePointer<UInt8>, rowStep: Int, w: UnsafePointer<Int32>,
                                            y: UnsafeMutablePointer<UInt8>, channel: Int, requant rq: RequantPointers) {
    let w0 = SIMD16<Int32>(repeating: w[0]), w1 = SIMD16<Int32>(repeating: w[1]), w2 = SIMD16<Int32>(repeating: w[2])
    for i in 0..<count {
        let t = tiles[i]
        let pattern = unsafeBitCast(patterns[Int(t[3])], to: SIMD8<Int64>.self)
        let row = plane + Int(t[2])
        var acc = dpbusd(SIMD16<Int32>(), gatherTaps(row, pattern), w0)
        acc = dpbusd(acc, gatherTaps(row + rowStep, pattern), w1)
        acc = dpbusd(acc, gatherTaps(row + 2 * rowStep, pattern), w2)
        RequantPointers.store(rq.store16(acc, channel: channel), to: y + Int(t[0]), count: Int(t[1]))
    }
}

/// Whether tiles i ..< i + 4 are full and consecutive (64 output bytes in a row): the fourth starts
/// 48 pixels after the first, and both are full (no tile holds more than 16).
@inline(__always)
func startsFourFullTiles(_ tiles: UnsafePointer<SIMD4<Int32>>, _ i: Int, _ count: Int) -> Bool {
    i + 4 <= count && tiles[i][1] == 16 && tiles[i + 3][0] == tiles[i][0] + 48 && tiles[i + 3][1] == 16
}

/// `qu8_dwconv_16p_3rows_avx512vnni` where four full tiles in a row (64 consecutive output bytes)
/// are requantized together and packed with saturation (`glimpse_pack4_i32_u8_512`: three packing
/// instructions and a byte maximum for 64 bytes, against two µops of `vpmovdb` per 16); other tiles
/// one by one. Same bytes as the one-tile store.
public func qu8_dwconv_16p_3rows_packed_avx512vnni(tiles: UnsafePointer<SIMD4<Int32>>, count: Int, patterns: UnsafePointer<SIMD64<UInt8>>,
                                                   plane: UnsafePointer<UInt8>, rowStep: Int, w: UnsafePointer<Int32>,
                                                   y: UnsafeMutablePointer<UInt8>, channel: Int, requant rq: RequantPointers) {
    let w0 = SIMD16<Int32>(repeating: w[0]), w1 = SIMD16<Int32>(repeating: w[1]), w2 = SIMD16<Int32>(repeating: w[2])
    let bias = SIMD16<Int32>(repeating: rq.bias[channel]), scale = SIMD16<Float>(repeating: rq.scale[channel])
    let lowerByte = rq.lowerByte
    @inline(__always) func sums(_ t: SIMD4<Int32>) -> SIMD16<Int32> {
        let pattern = unsafeBitCast(patterns[Int(t[3])], to: SIMD8<Int64>.self)
        let row = plane + Int(t[2])
        var acc = dpbusd(bias, gatherTaps(row, pattern), w0)
        acc = dpbusd(acc, gatherTaps(row + rowStep, pattern), w1)
        return dpbusd(acc, gatherTaps(row + 2 * rowStep, pattern), w2)
    }
    var i = 0
    while i < count {
        let t = tiles[i]
        if startsFourFullTiles(tiles, i, count) {
            let v = glimpse_pack4_i32_u8_512(rq.scaledToZeroPoint(sums(t), scale), rq.scaledToZeroPoint(sums(tiles[i + 1]), scale),
                                             rq.scaledToZeroPoint(sums(tiles[i + 2]), scale),
                                             rq.scaledToZeroPoint(sums(tiles[i + 3]), scale), lowerByte)
            UnsafeMutableRawPointer(y + Int(t[0])).storeBytes(of: v, as: SIMD8<Int64>.self)
            i += 4
        } else {
            RequantPointers.store(rq.store16Biased(sums(t), channel: channel), to: y + Int(t[0]), count: Int(t[1]))
            i += 1
        }
    }
}
#endif
