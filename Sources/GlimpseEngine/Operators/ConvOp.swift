import GlimpseKernels
import GlimpseTensor

/// 2-D convolution, NCHW. Inputs: x, W (constant), optional B (constant), optional residual
/// (added before the activation, set by the fusion pass), optional per-channel input scale
/// ([N, Cin, 1, 1], multiplied into x first; set by `FuseChannelScale`). Weights are packed once in `prepare`:
/// 6-row GEMM tiles per group, or kept plain for depthwise convolutions.
public final class ConvOp: Operator {
    public var opType: String { "Conv" }
    public var window: WindowAttributes
    public var group: Int
    public var activation = Activation()
    /// Requantization (set for QLinearConv lowered to float): output = round((acc + b)·scale[c]).
    public var outputScale: [Float]?
    /// A max pool applied to the output after the activation (`FuseMaxPool`): the node's output is
    /// then the pooled one.
    public var pool: WindowAttributes?
    var packed: TensorStorage?
    /// Weights in 8-channel blocks: for `f32_conv_8x16_direct` (ungrouped convolutions with a short
    /// reduction), or tap-major for `f32_dwconv_8x16_same` (depthwise convolutions).
    var direct: TensorStorage?
    /// The same blocks for the direct kernel's small-plane rule, packed by the first plan whose plane
    /// qualifies (`f32_conv_8x16_direct.smallPlanePixels`), so layers on larger planes hold no copy.
    private var smallPlaneDirect = Locked<TensorStorage?>(nil)
    var plainWeights: Tensor?
    /// Depthwise weights in 16-channel blocks, tap-major, for `f32_dwconv_16c_lanes`.
    var laneWeights: TensorStorage?
    /// Whether the weights and attributes allow Winograd (`f32_winograd_2x2_3x3`): 3×3 at stride 1 with one
    /// pixel of padding and at least `f32_winograd_2x2_3x3.minChannels` input channels. Whether it runs also
    /// depends on the plane (`runsWinograd`).
    var winogradEligible = false
    /// The weights' Winograd transforms, packed by the first plan that runs them (1.8 times the
    /// weights; not kept for layers whose planes never qualify, such as ResNet-50's odd 7×7 ones).
    private var winogradPacked = Locked<TensorStorage?>(nil)
    var bias: [Float] = []
    var biasStorage = Tensor(shape: [1])
    var scaleStorage: Tensor?
    var outChannels = 0
    var kernel: [Int] = []
    var inPerGroup = 0
    var isDepthwise = false

    public init(window: WindowAttributes, group: Int) {
        self.window = window
        self.group = group
    }

    public func prepare(constants: [Tensor?]) throws {
        guard constants.count >= 2, let w = constants[1] else {
            throw EngineError("weights must be a constant initializer")
        }
        guard w.dtype == .float32, w.shape.rank == 4 else { throw EngineError("weights must be float32 [Cout, Cin/group, KH, KW], got \(w)") }
        guard group >= 1, w.shape[0] % group == 0 else { throw EngineError("Cout \(w.shape[0]) not divisible by group \(group)") }
        outChannels = w.shape[0]
        inPerGroup = w.shape[1]
        kernel = [w.shape[2], w.shape[3]]
        if let ks = window.kernelShape, ks != kernel { throw EngineError("kernel_shape \(ks) does not match weights \(w.shape)") }
        if constants.count > 2, let b = constants[2] {
            guard b.count == outChannels else { throw EngineError("bias has \(b.count) values, expected \(outChannels)") }
            bias = b.floats()
        } else {
            bias = [Float](repeating: 0, count: outChannels)
        }
        if let s = outputScale {
            guard s.count == outChannels else { throw EngineError("requantization scale count mismatch") }
        }
        biasStorage = Tensor(shape: Shape([bias.count]), floats: bias)
        scaleStorage = outputScale.map { Tensor(shape: Shape([$0.count]), floats: $0) }
        let m = outChannels / group
        isDepthwise = inPerGroup == 1 && m == 1
        if isDepthwise {
            plainWeights = w
            // Small "same" planes run `f32_dwconv_8x16_same`, which reads its weights in 8-channel blocks.
            let taps = kernel[0] * kernel[1]
            let d = TensorStorage(byteCount: f32_dwconv_8x16_same.packedCount(channels: outChannels, taps: taps) * 4)
            f32_dwconv_8x16_same.pack(w.f32, channels: outChannels, taps: taps, into: d.bytes.assumingMemoryBound(to: Float.self))
            direct = d
            let l = TensorStorage(byteCount: f32_dwconv_16c_lanes.packedCount(channels: outChannels, taps: taps) * 4)
            f32_dwconv_16c_lanes.pack(w.f32, channels: outChannels, taps: taps, into: l.bytes.assumingMemoryBound(to: Float.self))
            laneWeights = l
            return
        }
        let k = inPerGroup * kernel[0] * kernel[1]
        let perGroup = GemmPacking.packedACount(m: m, k: k)
        // 16 floats of slack: the one-column path (`f32_gemv_packed_a`) reads 2 floats past a tile.
        let storage = TensorStorage(byteCount: (perGroup * group + 16) * 4)
        let dst = storage.bytes.assumingMemoryBound(to: Float.self)
        for g in 0..<group {
            GemmPacking.packA(w.f32 + g * m * k, m: m, k: k, rowStride: k, colStride: 1, into: dst + g * perGroup)
        }
        packed = storage
        if group == 1 && kernel == [3, 3] && inPerGroup >= f32_winograd_2x2_3x3.minChannels && outputScale == nil
            && window.strides == [1, 1] && window.dilations == [1, 1] && window.pads == [1, 1, 1, 1] && window.autoPad == .notSet {
            winogradEligible = true
        }
        if group == 1 && f32_conv_8x16_direct.takes(patch: k, outChannels: m, taps: kernel[0] * kernel[1]) {
            let d = TensorStorage(byteCount: f32_conv_8x16_direct.packedCount(m: m, k: k) * 4)
            f32_conv_8x16_direct.pack(w.f32, m: m, k: k, into: d.bytes.assumingMemoryBound(to: Float.self))
            direct = d
        }
    }

    /// The weights (input 1) of a convolution that is not depthwise run from `packed`, `direct` and
    /// the Winograd transforms made from `packed`; the bias (input 2) from `biasStorage`.
    public func packedAway(input: Int) -> Bool { (input == 1 && plainWeights == nil && packed != nil) || input == 2 }

    /// Whether `prepare(constants:)` would pack what `other` (already prepared with `otherConstants`)
    /// packed: the same weights, bias, grouping, window and requantization. Activation, residual and
    /// fused pool do not change the packing.
    func packsLike(_ other: ConvOp, constants: [Tensor?], otherConstants: [Tensor?]) -> Bool {
        guard group == other.group, window == other.window, outputScale == other.outputScale,
              constants.count >= 2, otherConstants.count >= 2,
              let w = constants[1], let ow = otherConstants[1], w.sameContents(as: ow) else { return false }
        let b = constants.count > 2 ? constants[2] : nil, ob = otherConstants.count > 2 ? otherConstants[2] : nil
        switch (b, ob) {
        case (nil, nil): return true
        case let (b?, ob?): return b.sameContents(as: ob)
        default: return false
        }
    }

    /// Takes `other`'s prepared weights instead of packing its own (see `packsLike`), the Winograd
    /// transforms included, packed once by whichever of the two is planned first. Models that run the
    /// same weights on several inputs (test-time augmentation, Siamese towers) then hold one copy.
    func sharePrepared(from other: ConvOp) {
        outChannels = other.outChannels
        inPerGroup = other.inPerGroup
        kernel = other.kernel
        bias = other.bias
        biasStorage = other.biasStorage
        scaleStorage = other.scaleStorage
        isDepthwise = other.isDepthwise
        plainWeights = other.plainWeights
        direct = other.direct
        laneWeights = other.laneWeights
        packed = other.packed
        winogradEligible = other.winogradEligible
        winogradPacked = other.winogradPacked
        smallPlaneDirect = other.smallPlaneDirect
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let x = inputs[0]
        guard x.shape.count == 4 else { throw EngineError("input must be 4-D NCHW") }
        guard x.shape[1] == inPerGroup * group else {
            throw EngineError("input has \(x.shape[1]) channels, weights expect \(inPerGroup * group)")
        }
        let g = try window.geometry(channels: inPerGroup, h: x.shape[2], w: x.shape[3], kernel: kernel)
        let out = [x.shape[0], outChannels, g.outHeight, g.outWidth]
        if let p = try poolGeometry(g) {
            guard inputs.count <= 3 || inputs.dropFirst(3).allSatisfy({ $0 == .absent }) else {
                throw EngineError("a pooled convolution takes no residual or input scale")
            }
            return [ValueType([x.shape[0], outChannels, p.outHeight, p.outWidth])]
        }
        if inputs.count > 3, inputs[3] != .absent, inputs[3].shape != out {
            throw EngineError("residual shape \(inputs[3].shape) differs from output \(out)")
        }
        if inputs.count > 4, inputs[4] != .absent, inputs[4].shape != [x.shape[0], x.shape[1], 1, 1] {
            throw EngineError("input scale shape \(inputs[4].shape) is not [\(x.shape[0]), \(x.shape[1]), 1, 1]")
        }
        return [ValueType(out)]
    }

    public func flops(_ inputs: [ValueType], _ outputs: [ValueType]) -> Int {
        let x = inputs[0].shape
        guard pool != nil, x.count == 4,
              let g = try? window.geometry(channels: inPerGroup, h: x[2], w: x[3], kernel: kernel) else {
            return 2 * (outputs.first?.count ?? 0) * inPerGroup * kernel.reduce(1, *)
        }
        return 2 * x[0] * outChannels * g.outPixels * inPerGroup * kernel.reduce(1, *)
    }

    /// Whether this convolution runs by Winograd for these inputs: its transformed weights exist, the
    /// plane fits (`f32_winograd_2x2_3x3.applies`), and there is nothing for the plain epilogue to add (no
    /// residual, input scale, fused pool or swish).
    func runsWinograd(_ g: ConvGeometry, _ inputs: [ValueType]) -> Bool {
        winogradEligible && packed != nil && pool == nil && !activation.swish && f32_winograd_2x2_3x3.applies(g)
            && inputs.dropFirst(3).allSatisfy({ $0 == .absent })
            // Planes small enough for the direct kernel run faster there (`f32_conv_8x16_direct.smallPlanePixels`).
            && !(group == 1 && f32_conv_8x16_direct.applies(g, outChannels: outChannels))
    }

    /// The direct kernel's weights for this plane: those packed at load, or for the small-plane rule
    /// packed on first use from the GEMM's packed weights; nil where the kernel does not apply.
    private func directWeights(_ g: ConvGeometry) -> TensorStorage? {
        guard !isDepthwise, group == 1, f32_conv_8x16_direct.applies(g, outChannels: outChannels) else { return direct }
        if let direct { return direct }
        let m = outChannels, k = inPerGroup * kernel.reduce(1, *)
        return repacked(smallPlaneDirect, k: k, floats: f32_conv_8x16_direct.packedCount(m: m, k: k)) { plain, dst in
            f32_conv_8x16_direct.pack(plain, m: m, k: k, into: dst)
        }
    }

    /// The Winograd transforms of the weights, packed on first use from the GEMM's packed weights.
    private func winogradWeights() -> TensorStorage? {
        let m = outChannels, cin = inPerGroup
        return repacked(winogradPacked, k: cin * 9, floats: f32_winograd_2x2_3x3.packedWeightCount(cout: m, cin: cin)) { plain, dst in
            f32_winograd_2x2_3x3.packWeights(plain, cout: m, cin: cin, into: dst)
        }
    }

    /// Another layout of the weights (`floats` long), made once by `pack` from the row-major weights
    /// ([outChannels][k], unpacked from the GEMM's copy) and kept in `cache`; nil without that copy.
    private func repacked(_ cache: Locked<TensorStorage?>, k: Int, floats: Int,
                          _ pack: (UnsafePointer<Float>, UnsafeMutablePointer<Float>) -> Void) -> TensorStorage? {
        guard let packed else { return nil }
        return cache.withLock { cached in
            if let cached { return cached }
            let m = outChannels
            let plain = UnsafeMutablePointer<Float>.allocate(capacity: m * k)
            defer { plain.deallocate() }
            GemmPacking.unpackA(UnsafePointer(packed.bytes.assumingMemoryBound(to: Float.self)), m: m, k: k, into: plain)
            let storage = TensorStorage(byteCount: floats * 4)
            pack(UnsafePointer(plain), storage.bytes.assumingMemoryBound(to: Float.self))
            cached = storage
            return storage
        }
    }

    /// The residual (input 3): the GEMM and `f32_conv_8x16_direct` paths add it in the store of the element it
    /// belongs to, after the last K block, so the output can overwrite it where the reduction is a
    /// single block. With several blocks the first ones store partial sums over it before it is
    /// read. Depthwise kernels (a 1 → 1 convolution here) are left out.
    public func inPlaceInput(_ inputs: [ValueType]) -> Int? {
        guard pool == nil, group == 1, !isDepthwise, inputs.count > 3, inputs[3] != .absent,
              inPerGroup * kernel.reduce(1, *) <= GemmDriver.kBlock else { return nil }
        return 3
    }

    /// The fused pool's window over one output plane of the convolution (`g`), or nil without one.
    func poolGeometry(_ g: ConvGeometry) throws -> ConvGeometry? {
        guard let pool else { return nil }
        guard let ks = pool.kernelShape else { throw EngineError("the fused MaxPool has no kernel_shape") }
        return try pool.geometry(channels: outChannels, h: g.outHeight, w: g.outWidth, kernel: ks)
    }

    public func workspaceFloats(_ inputs: [ValueType], _ outputs: [ValueType], threads: Int) -> Int {
        workspaceFloats(inputs, threads: threads, pooled: true)
    }

    /// The convolution's workspace, and with `pooled` its fused pool's after it (`PooledConv`).
    private func workspaceFloats(_ inputs: [ValueType], threads: Int, pooled: Bool) -> Int {
        let x = inputs[0].shape
        guard let g = try? window.geometry(channels: inPerGroup, h: x[2], w: x[3], kernel: kernel) else { return 0 }
        let per = ConvKernel.scratchFloats(g, depthwise: isDepthwise, group: group, outPerGroup: outChannels / group)
        let scaled = inputs.count > 4 && inputs[4] != .absent
            && !ConvKernel.scalesWhilePacking(g, depthwise: isDepthwise, group: group, requantizes: outputScale != nil)
        let copy = scaled ? ConvKernel.prescaledFloats(g, batch: x[0], group: group) : 0
        let residual = inputs.count > 3 && inputs[3] != .absent
        let staging = ConvKernel.stagingFloats(g, depthwise: isDepthwise, group: group, outPerGroup: outChannels / group,
                                               residual: residual)
        let own = threads * (per + 16) + staging + copy + 16
        if runsWinograd(g, inputs) {
            return max(own, WinogradConvKernel.workspaceFloats(g, outChannels: outChannels, threads: threads))
        }
        guard pooled, let p = try? poolGeometry(g) else { return own }
        return (own + 15) / 16 * 16 + PooledConv(conv: g, pool: p, channels: outChannels, batch: x[0], threads: threads,
                                depthwise: isDepthwise, group: group).workspaceFloats
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let geometry = try window.geometry(channels: inPerGroup, h: x.shape[2], w: x.shape[3], kernel: kernel)
        if runsWinograd(geometry, ctx.inputs.map { $0.map { ValueType($0.shape.dims, $0.dtype) } ?? .absent }),
           let u = winogradWeights() {
            return WinogradConvKernel(
                input: x.f32, output: ctx.outputs[0].f32, batch: x.shape[0], geometry: geometry, outChannels: outChannels,
                weights: UnsafePointer(u.bytes.assumingMemoryBound(to: Float.self)), bias: UnsafePointer(biasStorage.f32),
                activation: activation, workspace: ctx.workspace, threads: ctx.threads, retain: [u, biasStorage.storage])
        }
        guard let p = try poolGeometry(geometry) else { return try convKernel(ctx, geometry: geometry, output: ctx.outputs[0].f32) }
        // The convolution's own workspace comes first; the pool's bands (or the whole unpooled
        // output) follow it.
        let inputs = ctx.inputs.map { $0.map { ValueType($0.shape.dims, $0.dtype) } ?? .absent }
        let own = (workspaceFloats(inputs, threads: ctx.threads, pooled: false) + 15) / 16 * 16
        let plan = PooledConv(conv: geometry, pool: p, channels: outChannels, batch: x.shape[0], threads: ctx.threads,
                              depthwise: isDepthwise, group: group)
        let staging = ctx.workspace + own
        var conv = try convKernel(ctx, geometry: geometry, output: plan.banded ? ctx.outputs[0].f32 : staging)
        if !plan.banded { conv.rowsComputed = plan.convRowsRead }
        return PooledConvKernel(conv: conv, plan: plan, output: ctx.outputs[0].f32, staging: staging)
    }

    private func convKernel(_ ctx: KernelContext, geometry: ConvGeometry, output: UnsafeMutablePointer<Float>) throws -> ConvKernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let residual = ctx.input(3)
        let per = ConvKernel.scratchFloats(geometry, depthwise: isDepthwise, group: group, outPerGroup: outChannels / group) + 16
        let direct = directWeights(geometry)
        return ConvKernel(
            input: x.f32, output: output, residual: residual.map { UnsafePointer($0.f32) },
            inputScale: ctx.input(4).map { UnsafePointer($0.f32) },
            batch: x.shape[0], geometry: geometry, group: group, outPerGroup: outChannels / group,
            packed: packed.map { UnsafePointer($0.bytes.assumingMemoryBound(to: Float.self)) },
            direct: direct.map { UnsafePointer($0.bytes.assumingMemoryBound(to: Float.self)) },
            plain: plainWeights.map { UnsafePointer($0.f32) },
            lanes: laneWeights.map { UnsafePointer($0.bytes.assumingMemoryBound(to: Float.self)) }, bias: UnsafePointer(biasStorage.f32),
            scale: scaleStorage.map { UnsafePointer($0.f32) },
            activation: activation, workspace: ctx.workspace, scratchPerThread: per / 16 * 16, threads: ctx.threads,
            phaseTaps: ConvKernel.phaseTapOffsets(geometry, depthwise: isDepthwise, group: group, residual: residual != nil),
            retain: [packed as AnyObject?, direct, laneWeights, plainWeights?.storage, biasStorage.storage, scaleStorage?.storage].compactMap { $0 })
    }
}
