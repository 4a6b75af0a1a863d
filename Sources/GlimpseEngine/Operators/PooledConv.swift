import GlimpseKernels

/// How a convolution with a fused max pool (`FuseMaxPool`) runs for one batch size.
///
/// Banded: the output is computed a band of rows at a time into a buffer of its thread (about
/// `bandBytes`, so it stays in L2), as a GEMM over those rows' pixels, and the band is pooled
/// before the next one. Neither the whole output's write nor the pool's read of it goes past the
/// cache. Bands overlap where the pool's windows do (one row of a 3×3, stride-2 pool), and those
/// rows are computed twice. This needs a GEMM operand that can start at any column: pointwise,
/// shifted-plane (stride 1, "same") and dense phase-plane (strided, outputs at least 32 wide)
/// convolutions.
///
/// Whole: the others (short reductions that `f32_conv_8x16_direct` computes, grouped and depthwise ones,
/// narrow strided outputs) and small outputs write the whole output into the workspace and pool
/// it there.
struct PooledConv {
    let conv: ConvGeometry
    /// The pool's window over one whole output plane of the convolution.
    let pool: ConvGeometry
    let channels: Int
    let batch: Int
    let threads: Int
    let banded: Bool
    /// Bands per image: band b holds pooled rows `pooledRows(b)`.
    let bands: Int
    /// Floats of one thread's band buffer.
    let bandFloats: Int
    /// Floats of one thread's pooling scratch.
    let poolScratch: Int

    /// About this much of each band's output stays in cache for its pool.
    static let bandBytes = 768 << 10
    /// Outputs smaller than this per image fit in L2 whole and are not banded.
    static let minBandedBytes = 1 << 20

    init(conv g: ConvGeometry, pool p: ConvGeometry, channels: Int, batch: Int, threads: Int, depthwise: Bool, group: Int) {
        conv = g
        pool = p
        self.channels = channels
        self.batch = batch
        self.threads = threads
        poolScratch = (Pool2D.scratchCount(p) + 15) / 16 * 16
        let phased = ConvKernel.readsPhases(g, depthwise: depthwise, group: group, residual: false)
        let windowed = g.isPointwise || g.isShiftedPlane || (phased && PhasePlaneSource.readsDense(PhasePlanes(g)))
        banded = windowed && group == 1 && !depthwise && !f32_conv_8x16_direct.applies(g, outChannels: channels) && p.outHeight >= 2
            && channels * g.outPixels * 4 >= Self.minBandedBytes
        // Pooled rows per band from the byte budget; with fewer images than threads, a multiple of
        // the thread count of bands, so the threads share each image evenly.
        let rowBytes = max(1, channels * g.outWidth * 4)
        let convRows = max(p.kernelHeight, Self.bandBytes / rowBytes)
        let perBand = max(1, (convRows - p.kernelHeight) / p.strideH + 1)
        var count = (p.outHeight + perBand - 1) / perBand
        if batch < threads { count = min(p.outHeight, (count + threads - 1) / threads * threads) }
        bands = banded ? count : 1
        let most = (p.outHeight + bands - 1) / bands
        let rows = min(g.outHeight, (most - 1) * p.strideH + p.kernelHeight)
        bandFloats = (channels * rows * g.outWidth + 64 + 15) / 16 * 16
    }

    /// Rows of the convolution's output, from the top, that the pool's windows read: below the
    /// last window's last row nothing needs computing.
    var convRowsRead: Int {
        let last = (pool.outHeight - 1) * pool.strideH - pool.padTop + (pool.kernelHeight - 1) * pool.dilationH
        return min(conv.outHeight, max(0, last + 1))
    }

    var workspaceFloats: Int {
        banded ? threads * (bandFloats + poolScratch)
               : (batch * channels * conv.outPixels + 64 + 15) / 16 * 16 + threads * poolScratch
    }

    /// Pooled rows of band `band`: the bands split the rows evenly.
    func pooledRows(_ band: Int) -> Range<Int> {
        (pool.outHeight * band / bands)..<(pool.outHeight * (band + 1) / bands)
    }

    /// The rows of the convolution's output that pooled rows `rows` read.
    func convRows(_ rows: Range<Int>) -> Range<Int> {
        let lo = max(0, rows.lowerBound * pool.strideH - pool.padTop)
        let hi = min(conv.outHeight, (rows.upperBound - 1) * pool.strideH - pool.padTop + pool.kernelHeight)
        return lo..<max(lo, hi)
    }

    /// The pool's window over a band holding output rows `convRows`, giving pooled rows `rows`.
    func bandGeometry(_ rows: Range<Int>, _ convRows: Range<Int>) -> ConvGeometry {
        var g = pool
        g.inHeight = convRows.count
        g.padTop = convRows.lowerBound - (rows.lowerBound * pool.strideH - pool.padTop)
        g.outHeight = rows.count
        return g
    }
}

/// A convolution and the max pool fused into it (`PooledConv`).
struct PooledConvKernel: Kernel {
    /// Writes the whole output to `staging` (whole), or supplies the GEMM (banded).
    let conv: ConvKernel
    let plan: PooledConv
    let output: UnsafeMutablePointer<Float>
    /// The bands and pooling scratch of every thread, or the whole output and then the scratch.
    let staging: UnsafeMutablePointer<Float>

    func run(_ pool: ThreadPool) {
        if plan.banded {
            conv.runBands(pool, plan, output: output, staging: staging)
            return
        }
        conv.run(pool)
        let planes = plan.batch * plan.channels
        PoolOp.poolPlanes(pool, geometry: plan.pool, kind: .max, input: staging, output: output, planes: planes,
                          scratch: staging + (planes * plan.pool.inPixels + 64 + 15) / 16 * 16,
                          scratchPerThread: plan.poolScratch, threads: plan.threads)
    }
}

/// A GEMM operand's columns from `offset` on: one band of an output's rows.
struct ColumnWindowB<Inner: GemmBSource>: GemmBSource {
    let inner: Inner
    let offset: Int

    @inline(__always)
    func panel(k0: Int, kc: Int, n0: Int, nc: Int, scratch: UnsafeMutablePointer<Float>) -> UnsafePointer<Float> {
        inner.panel(k0: k0, kc: kc, n0: n0 &+ offset, nc: nc, scratch: scratch)
    }
}

extension ConvKernel {
    /// The banded run of `PooledConv`: bands of every image spread over the threads, each
    /// multiplied into its thread's buffer and pooled from there.
    func runBands(_ pool: ThreadPool, _ plan: PooledConv, output: UnsafeMutablePointer<Float>,
                  staging: UnsafeMutablePointer<Float>) {
        guard let packed else { return }
        let g = geometry
        let inImage = g.inChannels * g.inPixels, outImage = outPerGroup * plan.pool.outPixels
        let perThread = plan.bandFloats + plan.poolScratch
        if !phaseTaps.isEmpty {
            // The phase planes hold one image at a time, split by rows among the threads (`runPhased`).
            let planes = PhasePlanes(g)
            let phases = workspace + threads * scratchPerThread
            phaseTaps.withUnsafeBufferPointer { taps in
                guard let offsets = taps.baseAddress else { return }
                let b = PhasePlaneSource(phases: phases, channelStride: PhasePlaneSource.channelStride(planes), tapOffsets: offsets,
                               taps: taps.count, planes: planes, flat: false)
                for image in 0..<batch {
                    fillPhases(pool, planes, input: input + image * inImage, phases: phases)
                    pool.parallelTasks(plan.bands) { band, thread in
                        runBand(plan, band, b: b, packed: packed, output: output + image * outImage,
                                staging: staging + thread * perThread, scratch: workspace + thread * scratchPerThread)
                    }
                }
            }
            return
        }
        pool.parallelTasks(batch * plan.bands) { task, thread in
            let image = task / plan.bands, band = task % plan.bands
            let src = input + image * inImage, dst = output + image * outImage
            let buffer = staging + thread * perThread, scratch = workspace + thread * scratchPerThread
            if g.isPointwise {
                runBand(plan, band, b: RowMajorB(base: src, rowStride: g.inPixels), packed: packed, output: dst,
                        staging: buffer, scratch: scratch)
            } else {
                // The whole input tensor is readable around this image's planes.
                let readable = (input - src)..<(input + batch * inImage - src)
                runBand(plan, band, b: Im2colPanelSource(input: src, geometry: g, readable: readable), packed: packed, output: dst,
                        staging: buffer, scratch: scratch)
            }
        }
    }

    /// One band: the GEMM over its output rows' pixels into `staging` (channel planes of the band,
    /// its pixels apart), then the pool of every channel into the output.
    private func runBand<B: GemmBSource>(_ plan: PooledConv, _ band: Int, b: B, packed: UnsafePointer<Float>,
                                         output: UnsafeMutablePointer<Float>, staging: UnsafeMutablePointer<Float>,
                                         scratch: UnsafeMutablePointer<Float>) {
        let rows = plan.pooledRows(band), convRows = plan.convRows(rows)
        let m = outPerGroup, n = convRows.count * geometry.outWidth
        GemmDriver.run(m: m, n: n, k: geometry.patchSize, packedA: packed,
                       b: ColumnWindowB(inner: b, offset: convRows.lowerBound * geometry.outWidth), c: staging, ldc: n,
                       epilogue: epilogue(firstChannel: 0, residualAt: 0, residualStride: n),
                       panels: 0..<GemmDriver.panelCount(n: n), scratch: scratch)
        let pooler = f32_pool2d_rows(geometry: plan.bandGeometry(rows, convRows), kind: .max, scratch: staging + plan.bandFloats)
        let first = rows.lowerBound * plan.pool.outWidth
        for c in 0..<m {
            pooler.run(input: staging + c * n, output: output + c * plan.pool.outPixels + first,
                       readable: (-c * n)..<((m - c) * n))
        }
    }
}
