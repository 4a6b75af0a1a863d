/// GEMM B operand of a convolution whose im2col rows are not shifted copies of the input plane
/// (stride 2, or an output narrower than the input), read from the input's phase planes
/// (`PhasePlanes`, padding included). Output pixel (y, x) of im2col row (ci, kh, kw) is channel ci's
/// phases at y·Wq + x + tapOffset[kh, kw]: one output row is a contiguous run, and rows are Wq
/// floats apart, Wq − Wo more than the output's.
///
/// The columns are either the output's own pixels (`outWidth` > 0: a panel row is two vector copies,
/// or, for a panel that crosses into the next output row, two pairs of loads blended at the row's
/// end; for outputs at least 32 wide, so a panel spans at most two rows), or the *flat* output
/// (`outWidth` = 0: column o = y·Wq + x, the columns x ≥ Wo of each row junk, computed and then
/// dropped by `compact`; for narrow outputs, whose panels span several rows).
///
/// Channel ci's phases start `channelStride` floats after channel ci − 1's; `PhasePlanes`'s slack
/// keeps every read of a panel (32 columns from any start below Ho·Wq) inside the channel.
public struct PhasePlaneSource: GemmBSource {
    public let phases: UnsafePointer<Float>
    public let channelStride: Int
    /// Offsets of the KH·KW taps, row-major (`PhasePlanes.tapOffsets`).
    public let tapOffsets: UnsafePointer<Int>
    public let taps: Int
    /// Wo when the columns are output pixels and Wq > Wo; 0 when they are flat (or Wq = Wo).
    public let outWidth: Int
    /// Wq − Wo.
    public let rowGap: Int

    public init(phases: UnsafePointer<Float>, channelStride: Int, tapOffsets: UnsafePointer<Int>, taps: Int,
                planes: PhasePlanes, flat: Bool) {
        self.phases = phases
        self.channelStride = channelStride
        self.tapOffsets = tapOffsets
        self.taps = taps
        rowGap = planes.rowStride - planes.geometry.outWidth
        outWidth = flat || rowGap == 0 ? 0 : planes.geometry.outWidth
    }

    /// Whether a convolution's GEMM can take the output's pixels as its columns: outputs at least
    /// one panel wide (a panel then crosses at most one row end), or rows with no junk.
    public static func readsDense(_ planes: PhasePlanes) -> Bool {
        planes.geometry.outWidth >= GemmTile.nr || planes.rowStride == planes.geometry.outWidth
    }

    /// Floats of one channel's phases in the layout `PhasePlaneSource` reads.
    public static func channelStride(_ planes: PhasePlanes) -> Int { planes.phaseCount * planes.phaseSize }

    /// Writes phase rows `rows` of every channel of one image's phases at `phases` (channel ci at
    /// ci·`channelStride`), zero padding; the call that writes the last rows also zeroes each
    /// phase's slack, so junk columns read finite values. Calls with disjoint row ranges write
    /// disjoint floats, so threads can split an image by rows: each then finds in its own cache the
    /// rows its share of the output columns reads. Split by channels, every panel read the other
    /// core's channels, and 3 channels split 1 : 2; by rows, SqueezeNet's first layer (3 → 64,
    /// 224 → 111) took 324 µs instead of 349 on two threads.
    public static func fill(_ planes: PhasePlanes, input: UnsafePointer<Float>, rows: Range<Int>,
                            phases: UnsafeMutablePointer<Float>) {
        let stride = channelStride(planes)
        let used = planes.rows * planes.rowStride
        for ci in 0..<planes.geometry.inChannels {
            let dst = phases + ci * stride
            planes.fill(input: input + ci * planes.geometry.inPixels, padValue: 0, phases: dst, rows: rows)
            guard rows.upperBound >= planes.rows else { continue }
            for p in 0..<planes.phaseCount {
                let base = dst + p * planes.phaseSize
                (base + used).update(repeating: 0, count: planes.phaseSize - used)
            }
        }
    }

    @inline(__always)
    public func panel(k0: Int, kc: Int, n0: Int, nc: Int, scratch: UnsafeMutablePointer<Float>) -> UnsafePointer<Float> {
        // First flat column, and how many of the panel's columns lie in its output row.
        var first = n0, inRow = GemmTile.nr
        if outWidth > 0 {
            let y = n0 / outWidth, x = n0 &- y &* outWidth
            first = n0 &+ y &* rowGap
            inRow = outWidth &- x
        }
        let ci = k0 / taps
        var tap = k0 &- ci &* taps
        var channel = phases + (ci &* channelStride &+ first)
        var dst = UnsafeMutableRawPointer(scratch)
        if inRow >= GemmTile.nr {
            for _ in 0..<kc {
                let s = UnsafeRawPointer(channel + tapOffsets[tap])
                dst.storeBytes(of: s.loadUnaligned(as: SIMD16<Float>.self), as: SIMD16<Float>.self)
                dst.storeBytes(of: s.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self), toByteOffset: 64, as: SIMD16<Float>.self)
                dst += GemmTile.nr &* 4
                tap &+= 1
                if tap == taps {
                    tap = 0
                    channel += channelStride
                }
            }
            return UnsafePointer(scratch)
        }
        // The panel crosses a row end: lanes from `inRow` on come from the next row, `rowGap` further.
        let ramp = SIMD16<Int32>(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
        let next0 = ramp .>= SIMD16<Int32>(repeating: Int32(inRow)), next1 = ramp &+ 16 .>= SIMD16<Int32>(repeating: Int32(inRow))
        let gap = rowGap &* 4
        for _ in 0..<kc {
            let s = UnsafeRawPointer(channel + tapOffsets[tap])
            let a0 = s.loadUnaligned(as: SIMD16<Float>.self), b0 = s.loadUnaligned(fromByteOffset: gap, as: SIMD16<Float>.self)
            let a1 = s.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
            let b1 = s.loadUnaligned(fromByteOffset: gap &+ 64, as: SIMD16<Float>.self)
            dst.storeBytes(of: a0.replacing(with: b0, where: next0), as: SIMD16<Float>.self)
            dst.storeBytes(of: a1.replacing(with: b1, where: next1), toByteOffset: 64, as: SIMD16<Float>.self)
            dst += GemmTile.nr &* 4
            tap &+= 1
            if tap == taps {
                tap = 0
                channel += channelStride
            }
        }
        return UnsafePointer(scratch)
    }

    /// Copies rows `rows` of a flat GEMM result (rows `ldFlat` floats apart, output row y at
    /// columns y·Wq ..< y·Wq + Wo) restricted to flat columns `columns` into the dense output
    /// (rows Ho·Wo floats apart). Disjoint column ranges write disjoint outputs.
    public static func compact(_ flat: UnsafePointer<Float>, ldFlat: Int, rows: Range<Int>, columns: Range<Int>,
                               planes: PhasePlanes, into output: UnsafeMutablePointer<Float>) {
        guard !columns.isEmpty else { return }
        let wq = planes.rowStride, wo = planes.geometry.outWidth, pixels = planes.geometry.outPixels
        let y0 = columns.lowerBound / wq, y1 = min(planes.geometry.outHeight - 1, (columns.upperBound - 1) / wq)
        guard y0 <= y1 else { return }
        for r in rows {
            let src = flat + r * ldFlat, dst = output + r * pixels
            for y in y0...y1 {
                let lo = max(columns.lowerBound, y * wq), hi = min(columns.upperBound, y * wq + wo)
                if lo < hi { (dst + (y * wo + lo - y * wq)).update(from: src + lo, count: hi - lo) }
            }
        }
    }
}
