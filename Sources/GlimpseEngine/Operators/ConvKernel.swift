import GlimpseKernels

/// A convolution bound to its buffers for one batch size.
struct ConvKernel: Kernel {
    let input: UnsafePointer<Float>
    let output: UnsafeMutablePointer<Float>
    let residual: UnsafePointer<Float>?
    let batch: Int
    let geometry: ConvGeometry
    let group: Int
    let outPerGroup: Int
    let packed: UnsafePointer<Float>?
    let direct: UnsafePointer<Float>?
    let plain: UnsafePointer<Float>?
    let bias: UnsafePointer<Float>
    let scale: UnsafePointer<Float>?
    let activation: Activation
    let workspace: UnsafeMutablePointer<Float>
    let scratchPerThread: Int
    let threads: Int
    let retain: [AnyObject]

    /// Floats of the materialized im2col matrix this convolution uses (0 when it packs panels
    /// straight from the input: pointwise, shifted-plane or too large).
    static func im2colFloats(_ g: ConvGeometry, depthwise: Bool) -> Int {
        let n = g.patchSize * g.outPixels
        return depthwise || g.isPointwise || g.isShiftedPlane || n > Im2colMatrix.maxFloats ? 0 : n
    }

    /// The fused epilogue of output channels from `firstChannel` on (bias, requantization scale,
    /// activation), with the residual (if any) read from `residualAt` with rows `residualStride` apart.
    private func epilogue(firstChannel: Int, residualAt: Int, residualStride: Int) -> GemmEpilogue {
        GemmEpilogue(
            rowBias: bias + firstChannel, rowScale: scale.map { $0 + firstChannel }, roundToInteger: scale != nil,
            residual: residual.map { $0 + residualAt }, residualStride: residualStride,
            lowerBound: activation.lower, upperBound: activation.upper, swish: activation.swish)
    }

    func run(_ pool: ThreadPool) {
        if plain != nil { runDepthwise(pool) } else { runGemm(pool) }
    }

    private func runGemm(_ pool: ThreadPool) {
        guard let packed else { return }
        let g = geometry
        if let direct, group == 1, DirectConv.applies(g) {
            runDirect(pool, direct)
            return
        }
        if Self.im2colFloats(g, depthwise: false) > 0 {
            runMaterialized(pool, packed)
            return
        }
        let m = outPerGroup, n = g.outPixels, k = g.patchSize
        if g.isPointwise && n == 1 {
            runGemv(pool, packed)
            return
        }
        if g.isPointwise && group == 1 && batch > 1 && n >= GemmTile.nr {
            runFolded(pool, packed)
            return
        }
        let panels = GemmDriver.panelCount(n: n)
        let images = batch * group
        // Enough tasks to keep every thread busy; each task is a contiguous run of column panels.
        let chunks = images >= threads * 2 ? 1 : min(panels, max(1, (threads * 4 + images - 1) / images))
        let tasks = images * chunks
        let perGroupA = GemmPacking.packedACount(m: m, k: k)
        let inImage = g.inChannels * group * g.inPixels
        let outImage = m * group * n
        do {
            let slots = min(threads, tasks)
            pool.parallelFor(slots) { slot in
                let scratch = workspace + slot * scratchPerThread
                var task = slot
                while task < tasks {
                    let image = task / chunks, chunk = task % chunks
                    let b = image / group, grp = image % group
                    let lo = panels * chunk / chunks, hi = panels * (chunk + 1) / chunks
                    let src = input + b * inImage + grp * g.inChannels * g.inPixels
                    let dst = output + b * outImage + grp * m * n
                    let epilogue = epilogue(firstChannel: grp * m, residualAt: b * outImage + grp * m * n, residualStride: n)
                    let a = packed + grp * perGroupA
                    if g.isPointwise {
                        GemmDriver.run(m: m, n: n, k: k, packedA: a, b: RowMajorB(base: src, rowStride: n),
                                       c: dst, ldc: n, epilogue: epilogue, panels: lo..<hi, scratch: scratch)
                    } else {
                        // The whole input tensor is readable around this image's planes.
                        let readable = (input - src)..<(input + batch * inImage - src)
                        GemmDriver.run(m: m, n: n, k: k, packedA: a, b: Im2colB(input: src, geometry: g, readable: readable),
                                       c: dst, ldc: n, epilogue: epilogue, panels: lo..<hi, scratch: scratch)
                    }
                    task += slots
                }
            }
        }
    }

    /// Short-reduction "same" convolution (`DirectConv`): 16-pixel blocks of every image spread
    /// over the threads, each block computing all output channels from the input planes directly.
    private func runDirect(_ pool: ThreadPool, _ weights: UnsafePointer<Float>) {
        let g = geometry
        let m = outPerGroup, n = g.outPixels
        let blocks = DirectConv.blockCount(g)
        let total = batch * blocks
        let inImage = g.inChannels * g.inPixels, outImage = m * n
        let slots = min(threads, max(1, total / 4))
        Self.contiguousRuns(pool, slots: slots, items: batch, unitsPerItem: blocks) { _, b, part in
            let src = input + b * inImage
            DirectConv.run(input: src, readable: (input - src)..<(input + batch * inImage - src), weights: weights, m: m,
                           geometry: g, output: output + b * outImage,
                           epilogue: epilogue(firstChannel: 0, residualAt: b * outImage, residualStride: n), blocks: part)
        }
    }

    /// Splits `items` × `unitsPerItem` units of work into one contiguous run per slot and calls
    /// `body(slot, item, units)` for each item's share of a slot's run.
    private static func contiguousRuns(_ pool: ThreadPool, slots: Int, items: Int, unitsPerItem: Int,
                                       _ body: (Int, Int, Range<Int>) -> Void) {
        let total = items * unitsPerItem
        pool.parallelFor(slots) { slot in
            let hi = total * (slot + 1) / slots
            var task = total * slot / slots
            while task < hi {
                let item = task / unitsPerItem, first = task % unitsPerItem
                let end = min(hi, (item + 1) * unitsPerItem)
                body(slot, item, first..<(first + end - task))
                task = end
            }
        }
    }

    /// 1×1 convolution with the batch folded into N: one GEMM over batch·H·W columns, so the
    /// column tail of a small plane (49 of 64 columns at 7×7) is paid once, not per image.
    private func runFolded(_ pool: ThreadPool, _ packed: UnsafePointer<Float>) {
        let g = geometry
        let m = outPerGroup, n = g.outPixels, k = g.patchSize
        let panels = GemmDriver.panelCount(n: batch * n)
        let chunks = min(panels, threads * 4)
        let slots = min(threads, chunks)
        let epilogue = epilogue(firstChannel: 0, residualAt: 0, residualStride: n)
        let b = FoldedRowMajorB(base: input, imageColumns: n, imageStride: g.inChannels * n)
        pool.parallelFor(slots) { slot in
            let scratch = workspace + slot * scratchPerThread
            var chunk = slot
            while chunk < chunks {
                GemmDriver.run(m: m, n: batch * n, k: k, packedA: packed, b: b, c: output, ldc: n, epilogue: epilogue,
                               panels: (panels * chunk / chunks)..<(panels * (chunk + 1) / chunks), scratch: scratch,
                               imageColumns: n, imageStride: m * n)
                chunk += slots
            }
        }
    }

    /// 1×1 convolution of a 1×1 plane (squeeze-and-excitation): matrix-vector products, the row
    /// tiles of every image and group spread over the threads.
    private func runGemv(_ pool: ThreadPool, _ packed: UnsafePointer<Float>) {
        let m = outPerGroup, k = geometry.patchSize
        let tiles = (m + GemmTile.mr - 1) / GemmTile.mr
        let images = batch * group
        let total = images * tiles
        let perGroupA = GemmPacking.packedACount(m: m, k: k)
        let slots = min(threads, max(1, total / 8))
        // Each slot's row tiles, image (and group) i by image.
        Self.contiguousRuns(pool, slots: slots, items: images, unitsPerItem: tiles) { _, i, part in
            let grp = i % group
            let epilogue = epilogue(firstChannel: grp * m, residualAt: i * m, residualStride: 1)
            GemvPacked.run(m: m, k: k, packedA: packed + grp * perGroupA, x: input + i * k, y: output + i * m,
                           yStride: 1, epilogue: epilogue, tiles: part)
        }
    }

    /// im2col matrix per image and group (rows filled in parallel), then GEMM over column chunks.
    private func runMaterialized(_ pool: ThreadPool, _ packed: UnsafePointer<Float>) {
        let g = geometry
        let m = outPerGroup, n = g.outPixels, k = g.patchSize
        let panels = GemmDriver.panelCount(n: n)
        let perGroupA = GemmPacking.packedACount(m: m, k: k)
        let inImage = g.inChannels * group * g.inPixels, outImage = m * group * n
        let columns = workspace + threads * scratchPerThread
        let slots = min(threads, panels)
        for b in 0..<batch {
            for grp in 0..<group {
                let src = input + b * inImage + grp * g.inChannels * g.inPixels
                let dst = output + b * outImage + grp * m * n
                pool.parallelFor(min(threads, k)) { slot in
                    let t = min(threads, k)
                    Im2colMatrix.fill(input: src, geometry: g, rows: (k * slot / t)..<(k * (slot + 1) / t), into: columns)
                }
                let epilogue = epilogue(firstChannel: grp * m, residualAt: b * outImage + grp * m * n, residualStride: n)
                pool.parallelFor(slots) { slot in
                    GemmDriver.run(m: m, n: n, k: k, packedA: packed + grp * perGroupA,
                                   b: RowMajorB(base: columns, rowStride: n), c: dst, ldc: n, epilogue: epilogue,
                                   panels: (panels * slot / slots)..<(panels * (slot + 1) / slots),
                                   scratch: workspace + slot * scratchPerThread)
                }
            }
        }
    }

    private func runDepthwise(_ pool: ThreadPool) {
        guard let plain else { return }
        let g = geometry
        let channels = group
        let taps = g.kernelHeight * g.kernelWidth
        let planes = batch * channels
        if ShiftedDepthwise.applies(g) {
            // Blocks of 8 channels of every image spread over the threads, read in place.
            let blocks = (channels + ShiftedDepthwise.channelBlock - 1) / ShiftedDepthwise.channelBlock
            let inImage = channels * g.inPixels, outImage = channels * g.outPixels
            let slots = min(threads, batch * blocks)
            Self.contiguousRuns(pool, slots: slots, items: batch, unitsPerItem: blocks) { slot, b, part in
                let src = input + b * inImage
                let c0 = part.lowerBound * ShiftedDepthwise.channelBlock
                let c1 = min(channels, part.upperBound * ShiftedDepthwise.channelBlock)
                ShiftedDepthwise.run(
                    input: src, readable: (input - src)..<(input + batch * inImage - src), weights: plain,
                    channels: c0..<c1, geometry: g, output: output + b * outImage,
                    epilogue: epilogue(firstChannel: c0, residualAt: b * outImage + c0 * g.outPixels,
                                       residualStride: g.outPixels),
                    scratch: workspace + slot * scratchPerThread)
            }
            return
        }
        let slots = min(threads, planes)
        pool.parallelFor(slots) { slot in
            let plane = DepthwisePlane(geometry: g, scratch: workspace + slot * scratchPerThread)
            // Contiguous runs of planes per thread (better locality than interleaving).
            let lo = planes * slot / slots, hi = planes * (slot + 1) / slots
            for p in lo..<hi {
                let c = p % channels
                // The depthwise kernel adds its channel's bias itself.
                var epilogue = epilogue(firstChannel: c, residualAt: p * g.outPixels, residualStride: 0)
                epilogue.rowBias = nil
                plane.run(input: input + p * g.inPixels, weights: plain + c * taps, bias: bias[c],
                          output: output + p * g.outPixels, epilogue: epilogue)
            }
        }
    }
}
