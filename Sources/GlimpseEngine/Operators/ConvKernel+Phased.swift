import GlimpseKernels

/// Strided convolutions that read their input through phase planes (`PhasePlaneSource`).
extension ConvKernel {
    /// Phase planes per image (`PhasePlaneSource`), then GEMM over the output's pixels or, for narrow
    /// outputs, over the flat output; each task then compacts the part of the flat output it
    /// computed (its columns, or its rows for planes that split rows) while it is still in cache.
    func runPhased(_ pool: ThreadPool, _ packed: UnsafePointer<Float>) {
        let g = geometry
        let planes = PhasePlanes(g)
        let dense = PhasePlaneSource.readsDense(planes)
        let m = outPerGroup, n = dense ? g.outPixels : g.outHeight * planes.rowStride, k = g.patchSize
        let channelStride = PhasePlaneSource.channelStride(planes)
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
            let b = PhasePlaneSource(phases: phases, channelStride: channelStride, tapOffsets: offsets, taps: taps.count,
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
                        PhasePlaneSource.compact(flat, ldFlat: n, rows: rows, columns: columns, planes: planes, into: dst)
                    }
                }
            }
        }
    }

    /// One image's phase planes, split by rows among the threads, like the GEMM's columns (see
    /// `PhasePlaneSource.fill`).
    func fillPhases(_ pool: ThreadPool, _ planes: PhasePlanes, input: UnsafePointer<Float>, phases: UnsafeMutablePointer<Float>) {
        let fills = min(threads, planes.rows)
        pool.parallelFor(fills) { t in
            PhasePlaneSource.fill(planes, input: input, rows: (planes.rows * t / fills)..<(planes.rows * (t + 1) / fills), phases: phases)
        }
    }
}
