/// GEMM B operand of a convolution whose im2col rows are not shifted copies of the input plane
/// (stride 2, or an output narrower than the input), read from the input's phase planes
/// (`PhasePlanes`, padding included) over the *flat* output: column o = y·Wq + x, where the columns
/// x ≥ Wo of each output row are junk (computed, then dropped by `compact`). Im2col row
/// (ci, kh, kw) is then channel ci's phases read from o + tapOffset[kh, kw], contiguous, so a
/// panel row is two unmasked vector copies instead of a strided gather.
///
/// Channel ci's phases start `channelStride` floats after channel ci − 1's; `PhasePlanes`'s slack
/// keeps every read of a panel (32 columns from any start below Ho·Wq) inside the channel.
public struct PhaseB: GemmBSource {
    public let phases: UnsafePointer<Float>
    public let channelStride: Int
    /// Offsets of the KH·KW taps, row-major (`PhasePlanes.tapOffsets`).
    public let tapOffsets: UnsafePointer<Int>
    public let taps: Int

    public init(phases: UnsafePointer<Float>, channelStride: Int, tapOffsets: UnsafePointer<Int>, taps: Int) {
        self.phases = phases
        self.channelStride = channelStride
        self.tapOffsets = tapOffsets
        self.taps = taps
    }

    /// Floats of one channel's phases in the layout `PhaseB` reads.
    public static func channelStride(_ planes: PhasePlanes) -> Int { planes.phaseCount * planes.phaseSize }

    /// Writes channels `channels` of one image's phases at `phases` (channel ci at
    /// ci·`channelStride`), zero padding, and zeroes each phase's slack so junk columns read
    /// finite values.
    public static func fill(_ planes: PhasePlanes, input: UnsafePointer<Float>, channels: Range<Int>,
                            phases: UnsafeMutablePointer<Float>) {
        let stride = channelStride(planes)
        let used = planes.rows * planes.rowStride
        for ci in channels {
            let dst = phases + ci * stride
            planes.fill(input: input + ci * planes.geometry.inPixels, padValue: 0, phases: dst)
            for p in 0..<planes.phaseCount {
                let base = dst + p * planes.phaseSize
                (base + used).update(repeating: 0, count: planes.phaseSize - used)
            }
        }
    }

    @inline(__always)
    public func panel(k0: Int, kc: Int, n0: Int, nc: Int, scratch: UnsafeMutablePointer<Float>) -> UnsafePointer<Float> {
        let ci = k0 / taps
        var tap = k0 &- ci &* taps
        var channel = phases + (ci &* channelStride &+ n0)
        var dst = UnsafeMutableRawPointer(scratch)
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
