import GlimpseKernels

/// A convolution bound to its buffers for one batch size.
struct ConvKernel: Kernel {
    let input: UnsafePointer<Float>
    let output: UnsafeMutablePointer<Float>
    let residual: UnsafePointer<Float>?
    /// Per-image, per-input-channel scale ([N, Cin], squeeze-and-excitation) applied to the input
    /// first (`FuseChannelScale`).
    let inputScale: UnsafePointer<Float>?
    let batch: Int
    let geometry: ConvGeometry
    let group: Int
    let outPerGroup: Int
    let packed: UnsafePointer<Float>?
    let direct: UnsafePointer<Float>?
    let plain: UnsafePointer<Float>?
    /// Depthwise weights for `f32_dwconv_16c_lanes`.
    let lanes: UnsafePointer<Float>?
    let bias: UnsafePointer<Float>
    let scale: UnsafePointer<Float>?
    let activation: Activation
    let workspace: UnsafeMutablePointer<Float>
    let scratchPerThread: Int
    let threads: Int
    /// Offsets of the taps in the phase planes, for a convolution that reads its input through
    /// `PhasePlaneSource` (empty otherwise).
    let phaseTaps: [Int]
    let retain: [AnyObject]
    /// Output rows from the top that are computed where the path can stop early (the direct path);
    /// the rows below are left unwritten. A fused pool whose windows stop above the last rows
    /// (mnist-8's 3×3 pool at stride 3 reads 12 of 14) sets it (`PooledConv.convRowsRead`).
    var rowsComputed = Int.max

    /// Whether an ungrouped convolution whose im2col rows are not shifted copies of the input
    /// (stride 2, an output narrower than the input) reads phase planes (`PhasePlaneSource`) instead of an
    /// im2col matrix. Outputs at least 32 wide always do, with the output's pixels as the GEMM's
    /// columns. Narrower ones compute the flat output (Wq − Wo junk columns per row) and compact
    /// it, which pays where the waste is at most 1/8 (ResNet-50's 14 → 7 layer, 1/7, lost 5 %), the
    /// reduction long enough for the extra copy not to matter (a 27-long one lost 20 %), and there
    /// is no residual to read in that layout.
    /// A strided 1×1 convolution reads one phase of the input; filling all of them made ResNet-50's
    /// three 6–9 % slower than the im2col matrix (which then holds just that phase), so they keep it.
    static func readsPhases(_ g: ConvGeometry, depthwise: Bool, group: Int, residual: Bool) -> Bool {
        guard !depthwise, group == 1, !g.isPointwise, !g.isShiftedPlane, g.kernelHeight * g.kernelWidth > 1 else { return false }
        let planes = PhasePlanes(g)
        if PhasePlaneSource.readsDense(planes) { return true }
        return !residual && g.patchSize >= 128 && planes.rowStride * 8 <= g.outWidth * 9
    }

    /// Floats of workspace after the per-thread scratch that hold what the GEMM's B is packed from:
    /// the materialized im2col matrix, or the phase planes and the flat output (`PhasePlaneSource`); 0 when
    /// the convolution packs panels straight from the input (pointwise, shifted-plane, too large).
    static func stagingFloats(_ g: ConvGeometry, depthwise: Bool, group: Int, outPerGroup m: Int, residual: Bool) -> Int {
        if readsPhases(g, depthwise: depthwise, group: group, residual: residual) {
            let planes = PhasePlanes(g)
            let flat = PhasePlaneSource.readsDense(planes) ? 0 : m * g.outHeight * planes.rowStride
            return g.inChannels * PhasePlaneSource.channelStride(planes) + flat
        }
        let n = g.patchSize * Im2colMatrix.rowStride(g)
        return depthwise || g.isPointwise || g.isShiftedPlane || n > Im2colMatrix.maxFloats ? 0 : n
    }

    static func phaseTapOffsets(_ g: ConvGeometry, depthwise: Bool, group: Int, residual: Bool) -> [Int] {
        guard readsPhases(g, depthwise: depthwise, group: group, residual: residual) else { return [] }
        let taps = g.kernelHeight * g.kernelWidth
        return [Int](unsafeUninitializedCapacity: taps) { buffer, count in
            if let base = buffer.baseAddress { PhasePlanes(g).tapOffsets(base) }
            count = taps
        }
    }

    /// The fused epilogue of output channels from `firstChannel` on (bias, requantization scale,
    /// activation), with the residual (if any) read from `residualAt` with rows `residualStride` apart.
    func epilogue(firstChannel: Int, residualAt: Int, residualStride: Int) -> GemmEpilogue {
        GemmEpilogue(
            rowBias: bias + firstChannel, rowScale: scale.map { $0 + firstChannel }, roundToInteger: scale != nil,
            residual: residual.map { $0 + residualAt }, residualStride: residualStride,
            lowerBound: activation.lower, upperBound: activation.upper, swish: activation.swish)
    }

    func run(_ pool: ThreadPool) {
        if let inputScale, !scalesWhilePacking {
            runPrescaled(pool, inputScale)
        } else if plain != nil {
            runDepthwise(pool)
        } else {
            runGemm(pool)
        }
    }

    /// Whether an input scale is applied as the GEMM packs its B panels (a 1×1 convolution of more
    /// than one pixel, ungrouped), rather than to a scaled copy of the input (`runPrescaled`).
    var scalesWhilePacking: Bool {
        Self.scalesWhilePacking(geometry, depthwise: plain != nil, group: group, requantizes: scale != nil)
    }

    static func scalesWhilePacking(_ g: ConvGeometry, depthwise: Bool, group: Int, requantizes: Bool) -> Bool {
        !depthwise && group == 1 && g.isPointwise && g.outPixels > 1 && !requantizes && !readsRowsInPlace(g, group: group)
    }

    /// Whether the convolution is a 1×1 one of a 7×7 plane, which `Gemm49Driver` multiplies with
    /// its input read in place (an input scale is then applied to a copy first, `runPrescaled`).
    static func readsRowsInPlace(_ g: ConvGeometry, group: Int) -> Bool {
        group == 1 && g.isPointwise && g.outPixels == Gemm49Driver.columns
    }

    /// Floats of workspace, after the per-thread scratch and the im2col matrix, that hold the
    /// scaled copy of the input when the scale cannot be applied while packing.
    static func prescaledFloats(_ g: ConvGeometry, batch: Int, group: Int) -> Int {
        batch * group * g.inChannels * g.inPixels
    }

    /// Any other convolution with an input scale: the scaled input is written to the workspace
    /// first, then the convolution runs on it.
    private func runPrescaled(_ pool: ThreadPool, _ inputScale: UnsafePointer<Float>) {
        let g = geometry
        let channels = batch * group * g.inChannels, pixels = g.inPixels
        let copy = workspace + threads * scratchPerThread
            + Self.stagingFloats(g, depthwise: plain != nil, group: group, outPerGroup: outPerGroup, residual: residual != nil)
        let src = input
        let parts = min(threads, channels)
        pool.parallelFor(parts) { t in
            for c in (channels * t / parts)..<(channels * (t + 1) / parts) {
                f32_binary_row(.mul, src + c * pixels, 1, inputScale + c, 0, copy + c * pixels, pixels,
                               lower: -.infinity, upper: .infinity)
            }
        }
        let scaled = ConvKernel(
            input: copy, output: output, residual: residual, inputScale: nil, batch: batch, geometry: g, group: group,
            outPerGroup: outPerGroup, packed: packed, direct: direct, plain: plain, lanes: lanes, bias: bias, scale: scale,
            activation: activation, workspace: workspace, scratchPerThread: scratchPerThread, threads: threads,
            phaseTaps: phaseTaps, retain: [])
        scaled.run(pool)
    }
}
