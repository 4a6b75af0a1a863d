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
    /// Depthwise weights for `LaneDepthwise`.
    let lanes: UnsafePointer<Float>?
    let bias: UnsafePointer<Float>
    let scale: UnsafePointer<Float>?
    let activation: Activation
    let workspace: UnsafeMutablePointer<Float>
    let scratchPerThread: Int
    let threads: Int
    /// Offsets of the taps in the phase planes, for a convolution that reads its input through
    /// `PhaseB` (empty otherwise).
    let phaseTaps: [Int]
    let retain: [AnyObject]

    /// Whether an ungrouped convolution whose im2col rows are not shifted copies of the input
    /// (stride 2, an output narrower than the input) reads phase planes (`PhaseB`) instead of an
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
        if PhaseB.readsDense(planes) { return true }
        return !residual && g.patchSize >= 128 && planes.rowStride * 8 <= g.outWidth * 9
    }

    /// Floats of workspace after the per-thread scratch that hold what the GEMM's B is packed from:
    /// the materialized im2col matrix, or the phase planes and the flat output (`PhaseB`); 0 when
    /// the convolution packs panels straight from the input (pointwise, shifted-plane, too large).
    static func stagingFloats(_ g: ConvGeometry, depthwise: Bool, group: Int, outPerGroup m: Int, residual: Bool) -> Int {
        if readsPhases(g, depthwise: depthwise, group: group, residual: residual) {
            let planes = PhasePlanes(g)
            let flat = PhaseB.readsDense(planes) ? 0 : m * g.outHeight * planes.rowStride
            return g.inChannels * PhaseB.channelStride(planes) + flat
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
                binary_row_f32(.mul, src + c * pixels, 1, inputScale + c, 0, copy + c * pixels, pixels,
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

    private func runGemm(_ pool: ThreadPool) {
        guard let packed else { return }
        let g = geometry
        if let direct, group == 1, DirectConv.applies(g) {
            runDirect(pool, direct)
            return
        }
        if !phaseTaps.isEmpty {
            runPhased(pool, packed)
            return
        }
        if Self.stagingFloats(g, depthwise: false, group: group, outPerGroup: outPerGroup, residual: residual != nil) > 0 {
            runMaterialized(pool, packed)
            return
        }
        let m = outPerGroup, n = g.outPixels, k = g.patchSize
        if g.isPointwise && n == 1 {
            runGemv(pool, packed)
            return
        }
        if Self.readsRowsInPlace(g, group: group) {
            runSevenBySeven(pool, packed)
            return
        }
        if g.isPointwise && group == 1 && batch > 1 && n >= GemmTile.nr {
            runFolded(pool, packed)
            return
        }
        let panels = GemmDriver.panelCount(n: n)
        let images = batch * group
        let perGroupA = GemmPacking.packedACount(m: m, k: k)
        let inImage = g.inChannels * group * g.inPixels
        let outImage = m * group * n
        // Each task is a run of column panels of one image (and group), or, for planes of a few
        // panels, a run of row tiles: threads splitting a short row would share a cache line of
        // C in every row.
        let rowTiles = (m + GemmTile.mr - 1) / GemmTile.mr
        let rowChunks = Self.rowChunks(rowTiles: rowTiles, panels: panels, threads: threads)
        let splitRows = images < threads * 2 && rowChunks >= threads
        // One task per image when there are enough of them, else enough runs per image for
        // `tasksPerThread` tasks per thread.
        let perImage = max(1, (threads * Self.tasksPerThread + images - 1) / images)
        let chunks = images >= threads * 2 ? 1 : min(splitRows ? rowChunks : panels, perImage)
        pool.parallelTasks(images * chunks) { task, thread in
            let scratch = workspace + thread * scratchPerThread
            let image = task / chunks, chunk = task % chunks
            let b = image / group, grp = image % group
            let units = splitRows ? rowTiles : panels
            let part = (units * chunk / chunks)..<(units * (chunk + 1) / chunks)
            let columns = splitRows ? 0..<panels : part, rows = splitRows ? part : 0..<rowTiles
            let src = input + b * inImage + grp * g.inChannels * g.inPixels
            let dst = output + b * outImage + grp * m * n
            let epilogue = epilogue(firstChannel: grp * m, residualAt: b * outImage + grp * m * n, residualStride: n)
            let a = packed + grp * perGroupA
            if g.isPointwise {
                let scale = inputScale.map { $0 + b * g.inChannels }
                GemmDriver.run(m: m, n: n, k: k, packedA: a, b: RowMajorB(base: src, rowStride: n, rowScale: scale), c: dst, ldc: n,
                               epilogue: epilogue, panels: columns, rowTiles: rows, scratch: scratch)
            } else {
                // The whole input tensor is readable around this image's planes.
                let readable = (input - src)..<(input + batch * inImage - src)
                GemmDriver.run(m: m, n: n, k: k, packedA: a, b: Im2colB(input: src, geometry: g, readable: readable),
                               c: dst, ldc: n, epilogue: epilogue, panels: columns, rowTiles: rows, scratch: scratch)
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
        Self.contiguousRuns(pool, tasks: min(total / 4, threads * Self.tasksPerThread), items: batch,
                            unitsPerItem: blocks) { _, b, part in
            let src = input + b * inImage
            DirectConv.run(input: src, readable: (input - src)..<(input + batch * inImage - src), weights: weights, m: m,
                           geometry: g, output: output + b * outImage,
                           epilogue: epilogue(firstChannel: 0, residualAt: b * outImage, residualStride: n), blocks: part)
        }
    }

    /// Tasks per thread where work splits finely: handed out one at a time, they let the threads
    /// finish together even when one joins late (a worker still waking up waited ~20 µs per
    /// parallel region at the end with one static share per thread).
    static let tasksPerThread = 4

    /// How many runs of row tiles to split a GEMM into, or 0 to split it by columns. Planes of
    /// fewer than 8 column panels (256 pixels: 16×16 and below) split rows of C between threads,
    /// which then never share a cache line inside a row. Each run packs all of B again, which
    /// costs about as much as 27 rows of C, so runs are at least 16 tiles (96 rows) each, and
    /// their number is a multiple of the threads: 5 runs of a 512-channel layer on two threads
    /// left one thread 3 of them, and one thread worked 60 % of the time. Planes of at most 3
    /// panels (7×7 and below) with too few tiles for 16 per thread still split one run per thread
    /// when each gets 4 tiles or more: split by columns, a 7×7 plane's two panels (32 and 17
    /// columns) gave one thread two thirds. Wider planes split by columns then (at 13×13, runs of
    /// 5 tiles packing all of a 512-long B each made the layer 15 % slower).
    static func rowChunks(rowTiles: Int, panels: Int, threads: Int) -> Int {
        guard panels < 8 else { return 0 }
        let runs = rowTiles / 16
        if runs >= threads { return runs / threads * threads }
        return threads > 1 && panels <= 3 && rowTiles >= 4 * threads ? threads : runs
    }

    /// Splits `items` × `unitsPerItem` units of work into `tasks` contiguous runs (at least one) and
    /// calls `body(thread, item, units)` for each item's share of a run.
    private static func contiguousRuns(_ pool: ThreadPool, tasks: Int, items: Int, unitsPerItem: Int,
                                       _ body: (Int, Int, Range<Int>) -> Void) {
        let total = items * unitsPerItem
        let tasks = max(1, min(tasks, total))
        pool.parallelTasks(tasks) { slot, thread in
            let hi = total * (slot + 1) / tasks
            var task = total * slot / tasks
            while task < hi {
                let item = task / unitsPerItem, first = task % unitsPerItem
                let end = min(hi, (item + 1) * unitsPerItem)
                body(thread, item, first..<(first + end - task))
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
        let chunks = min(panels, threads * Self.tasksPerThread)
        let epilogue = epilogue(firstChannel: 0, residualAt: 0, residualStride: n)
        let b = FoldedRowMajorB(base: input, imageColumns: n, imageStride: g.inChannels * n,
                                rowScale: inputScale, rowScaleStride: g.inChannels)
        pool.parallelTasks(chunks) { chunk, thread in
            GemmDriver.run(m: m, n: batch * n, k: k, packedA: packed, b: b, c: output, ldc: n, epilogue: epilogue,
                           panels: (panels * chunk / chunks)..<(panels * (chunk + 1) / chunks),
                           scratch: workspace + thread * scratchPerThread, imageColumns: n, imageStride: m * n)
        }
    }

    /// 1×1 convolution of a 7×7 plane (`Gemm49Driver`): runs of row tiles of every image spread
    /// over the threads, each reading the image's input rows in place.
    private func runSevenBySeven(_ pool: ThreadPool, _ packed: UnsafePointer<Float>) {
        let g = geometry
        let m = outPerGroup, n = g.outPixels, k = g.patchSize
        let tiles = (m + GemmTile.mr - 1) / GemmTile.mr
        let inImage = g.inChannels * n, outImage = m * n
        Self.contiguousRuns(pool, tasks: min(batch * tiles / 4, threads * Self.tasksPerThread), items: batch,
                            unitsPerItem: tiles) { _, b, part in
            Gemm49Driver.run(m: m, k: k, packedA: packed, b: input + b * inImage, ldb: n, c: output + b * outImage, ldc: n,
                             epilogue: epilogue(firstChannel: 0, residualAt: b * outImage, residualStride: n), rowTiles: part)
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
        // Each task's row tiles, image (and group) i by image.
        Self.contiguousRuns(pool, tasks: min(total / 8, threads * Self.tasksPerThread), items: images,
                            unitsPerItem: tiles) { _, i, part in
            let grp = i % group
            let epilogue = epilogue(firstChannel: grp * m, residualAt: i * m, residualStride: 1)
            GemvPacked.run(m: m, k: k, packedA: packed + grp * perGroupA, x: input + i * k, y: output + i * m,
                           yStride: 1, epilogue: epilogue, tiles: part)
        }
    }

    /// im2col matrix per image and group, then GEMM. Each task fills the matrix columns of its own
    /// column panels and multiplies them, so the columns stay in the cache of the core that wrote
    /// them, and one parallel region does both. Planes of a few panels split rows instead (see
    /// `rowChunks`), as do 7×7 outputs: the matrix is filled first, its rows spread over the threads.
    private func runMaterialized(_ pool: ThreadPool, _ packed: UnsafePointer<Float>) {
        let g = geometry
        let m = outPerGroup, n = g.outPixels, k = g.patchSize
        let panels = GemmDriver.panelCount(n: n), rowTiles = (m + GemmTile.mr - 1) / GemmTile.mr
        let perGroupA = GemmPacking.packedACount(m: m, k: k)
        let inImage = g.inChannels * group * g.inPixels, outImage = m * group * n
        let columns = workspace + threads * scratchPerThread, ld = Im2colMatrix.rowStride(g)
        // A 7×7 output multiplies the whole matrix with 49-column tiles (`Gemm49Driver`), which read
        // it in place and pack nothing, so its runs of row tiles can be as short as 4 tiles.
        let fortyNine = n == Gemm49Driver.columns
        let rowChunks = fortyNine ? max(1, min(rowTiles / 4, threads * Self.tasksPerThread))
                                  : Self.rowChunks(rowTiles: rowTiles, panels: panels, threads: threads)
        let splitRows = fortyNine || rowChunks >= threads
        let units = splitRows ? rowTiles : panels
        let chunks = fortyNine ? rowChunks : min(splitRows ? rowChunks : panels, threads * Self.tasksPerThread)
        for b in 0..<batch {
            for grp in 0..<group {
                let src = input + b * inImage + grp * g.inChannels * g.inPixels
                let dst = output + b * outImage + grp * m * n
                let epilogue = epilogue(firstChannel: grp * m, residualAt: b * outImage + grp * m * n, residualStride: n)
                // The whole input tensor is readable around this image's planes.
                let readable = (input - src)..<(input + batch * inImage - src)
                if splitRows {
                    let fills = min(threads, k)
                    pool.parallelFor(fills) { t in
                        Im2colMatrix.fill(input: src, geometry: g, rows: (k * t / fills)..<(k * (t + 1) / fills),
                                          readable: readable, into: columns)
                    }
                }
                pool.parallelTasks(chunks) { chunk, thread in
                    let part = (units * chunk / chunks)..<(units * (chunk + 1) / chunks)
                    if !splitRows {
                        Im2colMatrix.fill(input: src, geometry: g, rows: 0..<k,
                                          columns: (part.lowerBound * GemmTile.nr)..<min(n, part.upperBound * GemmTile.nr),
                                          readable: readable, into: columns)
                    }
                    if fortyNine {
                        Gemm49Driver.run(m: m, k: k, packedA: packed + grp * perGroupA, b: columns, ldb: ld, c: dst, ldc: n,
                                         epilogue: epilogue, rowTiles: part)
                    } else {
                        GemmDriver.run(m: m, n: n, k: k, packedA: packed + grp * perGroupA,
                                       b: RowMajorB(base: columns, rowStride: ld), c: dst, ldc: n, epilogue: epilogue,
                                       panels: splitRows ? 0..<panels : part, rowTiles: splitRows ? part : 0..<rowTiles,
                                       scratch: workspace + thread * scratchPerThread)
                    }
                }
            }
        }
    }

    /// Phase planes per image (`PhaseB`), then GEMM over the output's pixels or, for narrow
    /// outputs, over the flat output; each task then compacts the part of the flat output it
    /// computed (its columns, or its rows for planes that split rows) while it is still in cache.
    private func runPhased(_ pool: ThreadPool, _ packed: UnsafePointer<Float>) {
        let g = geometry
        let planes = PhasePlanes(g)
        let dense = PhaseB.readsDense(planes)
        let m = outPerGroup, n = dense ? g.outPixels : g.outHeight * planes.rowStride, k = g.patchSize
        let channelStride = PhaseB.channelStride(planes)
        let phases = workspace + threads * scratchPerThread
        let flat = phases + g.inChannels * channelStride
        let panels = GemmDriver.panelCount(n: n), rowTiles = (m + GemmTile.mr - 1) / GemmTile.mr
        let rowChunks = Self.rowChunks(rowTiles: rowTiles, panels: panels, threads: threads)
        let splitRows = rowChunks >= threads
        let units = splitRows ? rowTiles : panels
        let chunks = min(splitRows ? rowChunks : panels, threads * Self.tasksPerThread)
        let inImage = g.inChannels * g.inPixels, outImage = m * g.outPixels
        phaseTaps.withUnsafeBufferPointer { taps in
            guard let offsets = taps.baseAddress else { return }
            let b = PhaseB(phases: phases, channelStride: channelStride, tapOffsets: offsets, taps: taps.count,
                           planes: planes, flat: !dense)
            for image in 0..<batch {
                let src = input + image * inImage, dst = output + image * outImage
                fillPhases(pool, planes, input: src, phases: phases)
                let epilogue = epilogue(firstChannel: 0, residualAt: image * outImage, residualStride: n)
                pool.parallelTasks(chunks) { chunk, thread in
                    let part = (units * chunk / chunks)..<(units * (chunk + 1) / chunks)
                    GemmDriver.run(m: m, n: n, k: k, packedA: packed, b: b, c: dense ? dst : flat, ldc: n, epilogue: epilogue,
                                   panels: splitRows ? 0..<panels : part, rowTiles: splitRows ? part : 0..<rowTiles,
                                   scratch: workspace + thread * scratchPerThread)
                    if !dense {
                        let rows = splitRows ? (part.lowerBound * GemmTile.mr)..<min(m, part.upperBound * GemmTile.mr) : 0..<m
                        let columns = splitRows ? 0..<n : (part.lowerBound * GemmTile.nr)..<min(n, part.upperBound * GemmTile.nr)
                        PhaseB.compact(flat, ldFlat: n, rows: rows, columns: columns, planes: planes, into: dst)
                    }
                }
            }
        }
    }

    /// One image's phase planes, split by rows among the threads, like the GEMM's columns (see
    /// `PhaseB.fill`).
    func fillPhases(_ pool: ThreadPool, _ planes: PhasePlanes, input: UnsafePointer<Float>, phases: UnsafeMutablePointer<Float>) {
        let fills = min(threads, planes.rows)
        pool.parallelFor(fills) { t in
            PhaseB.fill(planes, input: input, rows: (planes.rows * t / fills)..<(planes.rows * (t + 1) / fills), phases: phases)
        }
    }

    private func runDepthwise(_ pool: ThreadPool) {
        guard let plain else { return }
        let g = geometry
        let channels = group
        let taps = g.kernelHeight * g.kernelWidth
        let planes = batch * channels
        if let direct, ShiftedDepthwise.applies(g), !(lanes != nil && LaneDepthwise.applies(g)) {
            // Runs of 8-channel blocks of every image spread over the threads, read in place. Each
            // thread writes whole planes: split by pixels, the threads would share a cache line of
            // every plane of these small images.
            let blocks = (channels + ShiftedDepthwise.channelBlock - 1) / ShiftedDepthwise.channelBlock
            let inImage = channels * g.inPixels, outImage = channels * g.outPixels
            Self.contiguousRuns(pool, tasks: threads * Self.tasksPerThread, items: batch,
                                unitsPerItem: blocks) { thread, b, part in
                let src = input + b * inImage
                let c0 = part.lowerBound * ShiftedDepthwise.channelBlock
                let c1 = min(channels, part.upperBound * ShiftedDepthwise.channelBlock)
                ShiftedDepthwise.run(
                    input: src, readable: (input - src)..<(input + batch * inImage - src), weights: direct,
                    channels: c0..<c1, geometry: g, output: output + b * outImage,
                    epilogue: epilogue(firstChannel: c0, residualAt: b * outImage + c0 * g.outPixels,
                                       residualStride: g.outPixels),
                    scratch: workspace + thread * scratchPerThread)
            }
            return
        }
        // Contiguous runs of planes per task (better locality than interleaving).
        let tasks = min(planes, threads * Self.tasksPerThread)
        if RowDepthwise.applies(g) {
            let end = batch * channels * g.inPixels
            pool.parallelTasks(tasks) { task, _ in
                for p in (planes * task / tasks)..<(planes * (task + 1) / tasks) {
                    let c = p % channels, start = p * g.inPixels
                    RowDepthwise.run(input: input + start, readable: -start..<(end - start), weights: plain + c * taps,
                                     bias: bias[c], geometry: g, output: output + p * g.outPixels,
                                     epilogue: epilogue(firstChannel: c, residualAt: p * g.outPixels, residualStride: 0))
                }
            }
            return
        }
        if let lanes, LaneDepthwise.applies(g) {
            // Small strided planes (under 8 wide for 3×3 kernels) and 5×5 to 7×7 kernels on outputs
            // up to 28×28: runs of 16-channel blocks of every image spread over the threads.
            let blocks = (channels + LaneDepthwise.channelBlock - 1) / LaneDepthwise.channelBlock
            let inImage = channels * g.inPixels, outImage = channels * g.outPixels
            Self.contiguousRuns(pool, tasks: threads * Self.tasksPerThread, items: batch,
                                unitsPerItem: blocks) { thread, b, part in
                let c0 = part.lowerBound * LaneDepthwise.channelBlock
                let c1 = min(channels, part.upperBound * LaneDepthwise.channelBlock)
                LaneDepthwise.run(
                    input: input + b * inImage, weights: lanes, channels: c0..<c1, geometry: g, output: output + b * outImage,
                    epilogue: epilogue(firstChannel: c0, residualAt: b * outImage + c0 * g.outPixels, residualStride: g.outPixels),
                    scratch: workspace + thread * scratchPerThread)
            }
            return
        }
        pool.parallelTasks(tasks) { task, thread in
            let plane = DepthwisePlane(geometry: g, scratch: workspace + thread * scratchPerThread)
            for p in (planes * task / tasks)..<(planes * (task + 1) / tasks) {
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
