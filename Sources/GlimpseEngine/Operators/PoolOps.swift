import GlimpseKernels
import GlimpseTensor

/// MaxPool / AveragePool over NCHW planes of floats; MaxPool also over uint8 planes (quantized
/// activations, output uint8 with the same scale and zero point: the maximum commutes with the
/// monotonic dequantization).
public final class PoolOp: Operator {
    public let opType: String
    public let kind: PoolKind
    public var window: WindowAttributes

    public init(opType: String, kind: PoolKind, window: WindowAttributes) {
        self.opType = opType
        self.kind = kind
        self.window = window
    }

    func geometry(_ x: [Int]) throws -> ConvGeometry {
        guard x.count == 4 else { throw EngineError("input must be 4-D NCHW, got \(x)") }
        guard let ks = window.kernelShape else { throw EngineError("kernel_shape is required") }
        return try window.geometry(channels: x[1], h: x[2], w: x[3], kernel: ks)
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let x = inputs[0].shape
        let g = try geometry(x)
        switch inputs[0].dtype {
        case .float32: break
        case .uint8:
            guard case .max = kind else { throw EngineError("\(opType) of uint8 values is not supported") }
        default: throw EngineError("\(opType) of \(inputs[0].dtype.rawValue) values is not supported")
        }
        return [ValueType([x[0], x[1], g.outHeight, g.outWidth], inputs[0].dtype)]
    }

    public func workspaceFloats(_ inputs: [ValueType], _ outputs: [ValueType], threads: Int) -> Int {
        guard let g = try? geometry(inputs[0].shape) else { return 0 }
        if inputs[0].dtype == .uint8 { return threads * Self.u8ScratchFloats(g) }
        return threads * ((Pool2D.scratchCount(g) + 31) / 16 * 16)
    }

    /// Scratch of one thread's `u8_maxpool2d_rows`, in floats (a multiple of 64 bytes).
    static func u8ScratchFloats(_ g: ConvGeometry) -> Int { (u8_maxpool2d_rows.scratchBytes(g) + 63) / 64 * 16 }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let g = try geometry(x.shape.dims)
        if x.dtype == .uint8 { return u8Kernel(ctx, x, g) }
        let planes = x.shape[0] * x.shape[1]
        let src = UnsafePointer(x.f32), dst = ctx.outputs[0].f32
        let per = (Pool2D.scratchCount(g) + 31) / 16 * 16
        let ws = ctx.workspace, kind = self.kind
        let slots = min(ctx.threads, planes)
        let isMax: Bool
        if case .max = kind { isMax = true } else { isMax = false }
        if g.outHeight == 1, g.outWidth == 1, g.padTop == 0, g.padLeft == 0,
           g.kernelHeight == g.inHeight, g.kernelWidth == g.inWidth {
            // The window is the whole plane (SqueezeNet's final AveragePool): a global reduction.
            let size = g.inPixels
            return ClosureKernel { pool in
                pool.parallelFor(slots) { slot in
                    for p in (planes * slot / slots)..<(planes * (slot + 1) / slots) {
                        dst[p] = isMax ? f32_reduce_max(src + p * size, count: size)
                                       : f32_reduce_sum(src + p * size, count: size) / Float(size)
                    }
                }
            }
        }
        let threads = ctx.threads
        return ClosureKernel { pool in
            Self.poolPlanes(pool, geometry: g, kind: kind, input: src, output: dst, planes: planes, scratch: ws,
                            scratchPerThread: per, threads: threads)
        }
    }

    /// uint8 MaxPool: runs of planes per task, as `poolPlanes`.
    func u8Kernel(_ ctx: KernelContext, _ x: Tensor, _ g: ConvGeometry) -> any Kernel {
        let planes = x.shape[0] * x.shape[1]
        let src = UnsafePointer(x.pointer(as: UInt8.self)), dst = ctx.outputs[0].pointer(as: UInt8.self)
        let per = Self.u8ScratchFloats(g), ws = ctx.workspace
        let tasks = min(planes, ctx.threads * 4)
        return ClosureKernel { pool in
            pool.parallelTasks(tasks) { task, thread in
                let scratch = UnsafeMutableRawPointer(ws + thread * per).assumingMemoryBound(to: UInt8.self)
                let plane = u8_maxpool2d_rows(geometry: g, scratch: scratch)
                for p in (planes * task / tasks)..<(planes * (task + 1) / tasks) {
                    plane.run(input: src + p * g.inPixels, output: dst + p * g.outPixels)
                }
            }
        }
    }

    /// Pools `planes` planes back to back: several runs of planes per thread, handed out one at a
    /// time (see `ThreadPool.parallelTasks`), with the whole tensor readable around each plane.
    static func poolPlanes(_ pool: ThreadPool, geometry g: ConvGeometry, kind: PoolKind, input: UnsafePointer<Float>,
                           output: UnsafeMutablePointer<Float>, planes: Int, scratch: UnsafeMutablePointer<Float>,
                           scratchPerThread per: Int, threads: Int) {
        // One task on a one-thread pool: the row pooler is set up once, not per task.
        let tasks = pool.taskCount(min(planes, threads * 4))
        pool.parallelTasks(tasks) { task, thread in
            let plane = f32_pool2d_rows(geometry: g, kind: kind, scratch: scratch + thread * per)
            for p in (planes * task / tasks)..<(planes * (task + 1) / tasks) {
                plane.run(input: input + p * g.inPixels, output: output + p * g.outPixels,
                          readable: (-p * g.inPixels)..<((planes - p) * g.inPixels))
            }
        }
    }
}

/// GlobalAveragePool / GlobalMaxPool: [N, C, H, W] → [N, C, 1, 1].
public final class GlobalPoolOp: Operator {
    public let opType: String
    public let isMax: Bool

    public init(opType: String, isMax: Bool) {
        self.opType = opType
        self.isMax = isMax
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let x = inputs[0].shape
        guard x.count >= 3 else { throw EngineError("input must be at least 3-D, got \(x)") }
        return [ValueType([x[0], x[1]] + [Int](repeating: 1, count: x.count - 2))]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let planes = x.shape[0] * x.shape[1]
        let size = x.count / max(planes, 1)
        let src = UnsafePointer(x.f32), dst = ctx.outputs[0].f32
        let isMax = self.isMax
        let slots = min(ctx.threads, planes, max(1, planes * size / 4096))
        return ClosureKernel { pool in
            pool.parallelFor(slots) { slot in
                for p in (planes * slot / slots)..<(planes * (slot + 1) / slots) {
                    dst[p] = isMax ? f32_reduce_max(src + p * size, count: size)
                                   : f32_reduce_sum(src + p * size, count: size) / Float(size)
                }
            }
        }
    }
}
