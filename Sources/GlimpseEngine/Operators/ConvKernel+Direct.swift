import GlimpseKernels

/// Direct convolution (no im2col matrix), for the shapes where it wins.
extension ConvKernel {
    /// Short-reduction "same" convolution (`f32_conv_8x16_direct`): 16-pixel blocks of every image spread
    /// over the threads, each block computing all output channels from the input planes directly.
    func runDirect(_ pool: ThreadPool, _ weights: UnsafePointer<Float>) {
        let g = geometry
        let m = outPerGroup, n = g.outPixels
        // Only the blocks that hold the rows computed (the fused pool's windows may stop short).
        let blocks = min(f32_conv_8x16_direct.blockCount(g), (min(rowsComputed, g.outHeight) * g.outWidth + 15) / 16)
        let total = batch * blocks
        let inImage = g.inChannels * g.inPixels, outImage = m * n
        let copies = f32_conv_8x16_direct.readsCopies(g, outChannels: m)
            && scratchPerThread >= f32_conv_8x16_direct.copyFloats(g)
        Self.contiguousRuns(pool, tasks: min(total / 4, threads * Self.tasksPerThread), items: batch,
                            unitsPerItem: blocks) { thread, b, part in
            let src = input + b * inImage
            f32_conv_8x16_direct.run(input: src, readable: (input - src)..<(input + batch * inImage - src), weights: weights, m: m,
                           geometry: g, output: output + b * outImage,
                           epilogue: epilogue(firstChannel: 0, residualAt: b * outImage, residualStride: n), blocks: part,
                           copies: copies ? workspace + thread * scratchPerThread : nil)
        }
    }

    /// Tasks per thread where work splits finely: handed out one at a time, they let the threads
    /// finish together even when one joins late (a worker still waking up waited ~20 µs per
    /// parallel region at the end with one static share per thread).
    static let tasksPerThread = 4

    /// Floats of scratch each thread needs: the GEMM's panels, the depthwise kernel's planes, or the
    /// direct path's shifted copies of the input (`f32_conv_8x16_direct.readsCopies`), whichever the
    /// convolution uses (the largest where it may use several).
    static func scratchFloats(_ g: ConvGeometry, depthwise: Bool, group: Int, outPerGroup: Int) -> Int {
        if depthwise { return DepthwiseConv.scratchCount(g) }
        let gemm = GemmDriver.scratchCount(k: g.patchSize)
        guard group == 1, f32_conv_8x16_direct.applies(g, outChannels: outPerGroup),
              f32_conv_8x16_direct.readsCopies(g, outChannels: outPerGroup) else { return gemm }
        return max(gemm, f32_conv_8x16_direct.copyFloats(g))
    }
}
