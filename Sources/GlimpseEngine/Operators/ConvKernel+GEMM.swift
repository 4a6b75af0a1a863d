import GlimpseKernels

/// Convolutions that run as GEMMs: over an im2col matrix, folded 1×1 ones, 7×7-plane ones read in
/// place, GEMV for single pixels, and the materialized-matrix path.
extension ConvKernel {
    func runGemm(_ pool: ThreadPool) {
        guard let packed else { return }
        let g = geometry
        if let direct, group == 1, f32_conv_8x16_direct.applies(g, outChannels: outPerGroup) {
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
                GemmDriver.run(m: m, n: n, k: k, packedA: a, b: Im2colPanelSource(input: src, geometry: g, readable: readable),
                               c: dst, ldc: n, epilogue: epilogue, panels: columns, rowTiles: rows, scratch: scratch)
            }
        }
    }

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

    /// Splits `items` × `unitsPerItem` units of work into `tasks` contiguous runs (at least one; one
    /// on a one-thread pool) and calls `body(thread, item, units)` for each item's share of a run.
    static func contiguousRuns(_ pool: ThreadPool, tasks: Int, items: Int, unitsPerItem: Int,
                                       _ body: (Int, Int, Range<Int>) -> Void) {
        let total = items * unitsPerItem
        // One run on a one-thread pool: per-run set-up (the direct path's shifted copies of the
        // input rows) is then paid once per image.
        let tasks = pool.taskCount(max(1, min(tasks, total)))
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
    func runFolded(_ pool: ThreadPool, _ packed: UnsafePointer<Float>) {
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
    func runSevenBySeven(_ pool: ThreadPool, _ packed: UnsafePointer<Float>) {
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
    func runGemv(_ pool: ThreadPool, _ packed: UnsafePointer<Float>) {
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
            f32_gemv_packed_a.run(m: m, k: k, packedA: packed + grp * perGroupA, x: input + i * k, y: output + i * m,
                           yStride: 1, epilogue: epilogue, tiles: part)
        }
    }

    /// im2col matrix per image and group, then GEMM. Each task fills the matrix columns of its own
    /// column panels and multiplies them, so the columns stay in the cache of the core that wrote
    /// them, and one parallel region does both. Planes of a few panels split rows instead (see
    /// `rowChunks`), as do 7×7 outputs: the matrix is filled first, its rows spread over the threads.
    func runMaterialized(_ pool: ThreadPool, _ packed: UnsafePointer<Float>) {
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
}
