import GlimpseKernels

/// Depthwise convolutions (row, lane and shifted kernels).
extension ConvKernel {
    func runDepthwise(_ pool: ThreadPool) {
        guard let plain else { return }
        let g = geometry
        let channels = group
        let taps = g.kernelHeight * g.kernelWidth
        let planes = batch * channels
        if let direct, f32_dwconv_8x16_same.applies(g), !(lanes != nil && f32_dwconv_16c_lanes.applies(g)) {
            // Runs of 8-channel blocks of every image spread over the threads, read in place. Each
            // thread writes whole planes: split by pixels, the threads would share a cache line of
            // every plane of these small images.
            let blocks = (channels + f32_dwconv_8x16_same.channelBlock - 1) / f32_dwconv_8x16_same.channelBlock
            let inImage = channels * g.inPixels, outImage = channels * g.outPixels
            Self.contiguousRuns(pool, tasks: threads * Self.tasksPerThread, items: batch,
                                unitsPerItem: blocks) { thread, b, part in
                let src = input + b * inImage
                let c0 = part.lowerBound * f32_dwconv_8x16_same.channelBlock
                let c1 = min(channels, part.upperBound * f32_dwconv_8x16_same.channelBlock)
                f32_dwconv_8x16_same.run(
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
        if f32_dwconv_3x3_rows.applies(g) {
            let end = batch * channels * g.inPixels
            pool.parallelTasks(tasks) { task, _ in
                for p in (planes * task / tasks)..<(planes * (task + 1) / tasks) {
                    let c = p % channels, start = p * g.inPixels
                    f32_dwconv_3x3_rows.run(input: input + start, readable: -start..<(end - start), weights: plain + c * taps,
                                     bias: bias[c], geometry: g, output: output + p * g.outPixels,
                                     epilogue: epilogue(firstChannel: c, residualAt: p * g.outPixels, residualStride: 0))
                }
            }
            return
        }
        if let lanes, f32_dwconv_16c_lanes.applies(g) {
            // Small strided planes (under 8 wide for 3×3 kernels) and 5×5 to 7×7 kernels on outputs
            // up to 28×28: runs of 16-channel blocks of every image spread over the threads.
            let blocks = (channels + f32_dwconv_16c_lanes.channelBlock - 1) / f32_dwconv_16c_lanes.channelBlock
            let inImage = channels * g.inPixels, outImage = channels * g.outPixels
            Self.contiguousRuns(pool, tasks: threads * Self.tasksPerThread, items: batch,
                                unitsPerItem: blocks) { thread, b, part in
                let c0 = part.lowerBound * f32_dwconv_16c_lanes.channelBlock
                let c1 = min(channels, part.upperBound * f32_dwconv_16c_lanes.channelBlock)
                f32_dwconv_16c_lanes.run(
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
