import GlimpseKernels
import GlimpseTensor

/// QLinearConv on uint8 activations and int8 weights (per-tensor or per-channel scale, weight zero
/// point 0), output uint8. Built by `LowerQuantizedToInt8` with all quantization parameters resolved.
///
/// - depthwise (one input and one output channel per group): `QU8DepthwiseVNNI` (integer sums,
///   VNNI builds), else `QU8Depthwise` (exact float sums), per channel plane;
/// - group 1: `QS8Conv`, a u8 × s8 GEMM over tiles of 32 output pixels (1×1 convolutions read the
///   input rows, others an im2col panel).
///
/// Requantization (bias, zero-point correction, per-channel scale, output zero point, clamp) happens
/// in the kernels' stores.
public final class Int8ConvOp: Operator {
    public var opType: String { "QLinearConv" }
    public let window: WindowAttributes
    public let group: Int
    /// The int8 weights until `prepare` packs them (then dropped).
    private var weights: Tensor?
    let requantization: Requantization
    let inputZeroPoint: UInt8
    let outChannels: Int
    let inPerGroup: Int
    let kernel: [Int]
    public let isDepthwise: Bool
    private var packed: TensorStorage?
    /// The layout `packed` has (`QS8Gemm.packsWide` when the weights were packed): the kernel follows it.
    private var wide = QS8Gemm.packsWide
    private var depthwiseWeights: TensorStorage?
    private var requant: RequantStorage?
    /// Depthwise in integers: weight words and the requantization with zx·Σw folded into the bias.
    private var depthwiseWords: [Int32] = []
    private var requantRaw: RequantStorage?

    /// `weights` int8 `[Cout, Cin/group, KH, KW]`; `requantization.bias` is the model's bias (in
    /// units of `sx·sw[c]`), the zero-point correction is added in `prepare`.
    public init(window: WindowAttributes, group: Int, weights: Tensor, inputZeroPoint: UInt8, requantization: Requantization) throws {
        guard weights.dtype == .int8, weights.shape.rank == 4 else { throw EngineError("weights must be int8 [Cout, Cin/group, KH, KW]") }
        guard group >= 1, weights.shape[0] % group == 0 else { throw EngineError("Cout \(weights.shape[0]) not divisible by group \(group)") }
        guard requantization.bias.count == weights.shape[0] else { throw EngineError("one bias and scale per output channel expected") }
        self.window = window
        self.group = group
        self.weights = weights
        self.inputZeroPoint = inputZeroPoint
        self.requantization = requantization
        outChannels = weights.shape[0]
        inPerGroup = weights.shape[1]
        kernel = [weights.shape[2], weights.shape[3]]
        isDepthwise = inPerGroup == 1 && group == outChannels
        guard isDepthwise || group == 1 else { throw EngineError("grouped int8 convolutions are not supported") }
        if let ks = window.kernelShape, ks != kernel { throw EngineError("kernel_shape \(ks) does not match weights \(weights.shape)") }
        if isDepthwise && (kernel[0] * kernel[1] > QU8Depthwise.maxTaps || !(1...2).contains(window.strides.last ?? 1)) {
            throw EngineError("depthwise window larger than \(QU8Depthwise.maxTaps) taps or stride above 2")
        }
    }

    public func prepare(constants: [Tensor?]) throws {
        guard packed == nil && depthwiseWeights == nil, let weights else { return }
        defer { self.weights = nil }
        let w = UnsafePointer(weights.pointer(as: Int8.self))
        let k = inPerGroup * kernel[0] * kernel[1]
        var r = requantization
        if isDepthwise {
            let taps = kernel[0] * kernel[1]
            let d = TensorStorage(byteCount: outChannels * taps * 4)
            let f = d.bytes.assumingMemoryBound(to: Float.self)
            for i in 0..<outChannels * taps { f[i] = Float(w[i]) }
            depthwiseWeights = d
#if GLIMPSE_VNNI
            depthwiseWords = QU8DepthwiseVNNI.packWeights(w, channels: outChannels, kernelHeight: kernel[0], kernelWidth: kernel[1])
            var raw = r
            for c in 0..<outChannels {
                var sum: Int32 = 0
                for i in 0..<taps { sum &+= Int32(w[c * taps + i]) }
                raw.bias[c] = raw.bias[c] &- Int32(inputZeroPoint) &* sum
            }
            requantRaw = RequantStorage(raw)
#endif
        } else {
            wide = QS8Gemm.packsWide
            let storage = TensorStorage(byteCount: QS8Gemm.packedACount(m: outChannels, k: k, wide: wide))
            QS8Gemm.packA(w, m: outChannels, k: k, into: storage.bytes.assumingMemoryBound(to: Int8.self), wide: wide)
            packed = storage
            // The GEMM sums raw u8 inputs: Σ w·(x − zx) = Σ w·x − zx·Σw.
            let sums = QS8Gemm.rowSums(w, m: outChannels, k: k)
            for c in 0..<outChannels { r.bias[c] = r.bias[c] &- Int32(inputZeroPoint) &* sums[c] }
        }
        requant = RequantStorage(r)
    }

    func geometry(_ x: [Int]) throws -> ConvGeometry {
        guard x.count == 4 else { throw EngineError("input must be 4-D NCHW") }
        guard x[1] == inPerGroup * group else { throw EngineError("input has \(x[1]) channels, weights expect \(inPerGroup * group)") }
        let g = try window.geometry(channels: inPerGroup, h: x[2], w: x[3], kernel: kernel)
        return g
    }

    /// Every input but x was resolved when the operator was built, and the weights are packed.
    public func packedAway(input: Int) -> Bool { input != 0 && (packed != nil || depthwiseWeights != nil) }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        guard inputs[0].dtype == .uint8 else { throw EngineError("input must be uint8, got \(inputs[0].dtype.rawValue)") }
        let g = try geometry(inputs[0].shape)
        return [ValueType([inputs[0].shape[0], outChannels, g.outHeight, g.outWidth], .uint8)]
    }

    public func flops(_ inputs: [ValueType], _ outputs: [ValueType]) -> Int {
        2 * (outputs.first?.count ?? 0) * inPerGroup * kernel[0] * kernel[1]
    }

    /// Scratch floats per thread.
    func perThread(_ g: ConvGeometry) -> Int {
        let gemm = QS8Conv(geometry: g, outChannels: outChannels, inputZeroPoint: inputZeroPoint, wide: wide)
        var n = isDepthwise ? QU8Depthwise(geometry: g, inputZeroPoint: inputZeroPoint).scratchFloats
                            : ((g.isPointwise ? gemm.batchScratchBytes : gemm.panelBytes) + 3) / 4
#if GLIMPSE_VNNI
        if isDepthwise, let dw = QU8DepthwiseVNNI(geometry: g, inputZeroPoint: inputZeroPoint) { n = max(n, (dw.scratchBytes + 3) / 4) }
#endif
        return (n + 31) / 16 * 16
    }

    public func workspaceFloats(_ inputs: [ValueType], _ outputs: [ValueType], threads: Int) -> Int {
        guard let g = try? geometry(inputs[0].shape) else { return 0 }
        return threads * perThread(g)
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0], x.dtype == .uint8 else { throw EngineError("missing uint8 input") }
        guard let requant else { throw EngineError("operator used before prepare") }
        let g = try geometry(x.shape.dims)
        let batch = x.shape[0]
        let src = UnsafePointer(x.pointer(as: UInt8.self)), dst = ctx.outputs[0].pointer(as: UInt8.self)
        let per = perThread(g), workspace = ctx.workspace
        let rq = requant.pointers
        let inImage = g.inPixels * inPerGroup * group, outImage = g.outPixels * outChannels
        // Depthwise tasks of several channels (the scratch padding is set once per task), at least
        // four per thread.
        let channels = outChannels
        let chunk = max(1, min(16, channels / (4 * max(ctx.threads, 1))))
        let chunks = (channels + chunk - 1) / chunk
#if GLIMPSE_VNNI
        if isDepthwise, let raw = requantRaw, let conv = QU8DepthwiseVNNI(geometry: g, inputZeroPoint: inputZeroPoint) {
            let words = depthwiseWords
            let rqRaw = raw.pointers
            return ClosureKernel { pool in
                withExtendedLifetime(raw) {
                    words.withUnsafeBufferPointer { wb in
                        guard let w = wb.baseAddress else { return }
                        pool.parallelTasks(batch * chunks) { task, thread in
                            let c0 = (task % chunks) * chunk, n = task / chunks
                            let scratch = UnsafeMutableRawPointer(workspace + thread * per).assumingMemoryBound(to: UInt8.self)
                            conv.runChannels(c0..<min(channels, c0 + chunk), x: src + n * inImage, w: w, y: dst + n * outImage,
                                             requant: rqRaw, scratch: scratch)
                        }
                    }
                }
            }
        }
#endif
        if isDepthwise, let dw = depthwiseWeights {
            let conv = QU8Depthwise(geometry: g, inputZeroPoint: inputZeroPoint)
            let w = UnsafePointer(dw.bytes.assumingMemoryBound(to: Float.self))
            return ClosureKernel { pool in
                withExtendedLifetime((requant, dw)) {
                    pool.parallelTasks(batch * chunks) { task, thread in
                        let c0 = (task % chunks) * chunk, n = task / chunks
                        conv.runChannels(c0..<min(channels, c0 + chunk), x: src + n * inImage, w: w, y: dst + n * outImage,
                                         requant: rq, scratch: workspace + thread * per)
                    }
                }
            }
        }
        guard let packed else { throw EngineError("operator used before prepare") }
        let conv = QS8Conv(geometry: g, outChannels: outChannels, inputZeroPoint: inputZeroPoint, wide: wide)
        let a = UnsafePointer(packed.bytes.assumingMemoryBound(to: Int8.self))
        // Pointwise convolutions run the batch as one GEMM (`runBatchTile`: no short tile per image),
        // others tiles of 32 pixels per image.
        let pointwise = g.isPointwise, tiles = conv.tilesPerImage
        let columnTasks = pointwise ? conv.batchTiles(batch: batch) : batch * tiles
        return ClosureKernel { pool in
            withExtendedLifetime((requant, packed)) {
                if pointwise {
                    Self.parallelTilesEvenly(pool, tiles: columnTasks, rows: channels) { tile, rows, thread in
                        let scratch = UnsafeMutableRawPointer(workspace + thread * per).assumingMemoryBound(to: UInt8.self)
                        conv.runBatchTile(tile, batch: batch, rows: rows, x: src, y: dst, packedA: a, requant: rq, scratch: scratch)
                    }
                    return
                }
                pool.parallelTasks(columnTasks) { column, thread in
                    let scratch = UnsafeMutableRawPointer(workspace + thread * per).assumingMemoryBound(to: UInt8.self)
                    let n = column / tiles
                    conv.runTile(column % tiles, x: src + n * inImage, y: dst + n * outImage, packedA: a, requant: rq, panel: scratch)
                }
            }
        }
    }

    /// Runs a GEMM's column tiles (each over output rows `0..<rows`) on the pool's threads so that each
    /// thread gets the same work: whole rounds of tiles, then its part of each tile left over, split by
    /// output rows (multiples of the kernel's 8). Splitting every tile so was measured slower (each part
    /// packs its own panel); without the leftover split, a 14×14 plane's 7 tiles ran 4 and 3 on two threads.
    static func parallelTilesEvenly(_ pool: ThreadPool, tiles: Int, rows: Int,
                                    _ body: (_ tile: Int, _ rows: Range<Int>, _ thread: Int) -> Void) {
        let threads = pool.threads, mr = QS8Gemm.mr
        guard threads > 1, tiles % threads != 0, rows >= threads * mr else {
            pool.parallelTasks(tiles) { tile, thread in body(tile, 0..<rows, thread) }
            return
        }
        // Thread t's share of the tasks (`parallelTasks` gives each thread an equal contiguous share):
        // `whole` tiles, then its part of each leftover tile.
        let whole = tiles / threads, perShare = whole + tiles % threads
        pool.parallelTasks(threads * perShare) { task, thread in
            let share = task / perShare, j = task % perShare
            if j < whole {
                body(share * whole + j, 0..<rows, thread)
            } else {
                let lower = rows * share / threads / mr * mr
                let upper = share == threads - 1 ? rows : rows * (share + 1) / threads / mr * mr
                body(threads * whole + j - whole, lower..<upper, thread)
            }
        }
    }
}
