import GlimpseKernels
import GlimpseTensor

/// MaxPool / AveragePool over NCHW planes.
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
        return [ValueType([x[0], x[1], g.outHeight, g.outWidth])]
    }

    public func workspaceFloats(_ inputs: [ValueType], _ outputs: [ValueType], threads: Int) -> Int {
        guard let g = try? geometry(inputs[0].shape) else { return 0 }
        return threads * ((Pool2D.scratchCount(g) + 31) / 16 * 16)
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let g = try geometry(x.shape.dims)
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

    /// Pools `planes` planes back to back: several runs of planes per thread, handed out one at a
    /// time (see `ThreadPool.parallelTasks`), with the whole tensor readable around each plane.
    static func poolPlanes(_ pool: ThreadPool, geometry g: ConvGeometry, kind: PoolKind, input: UnsafePointer<Float>,
                           output: UnsafeMutablePointer<Float>, planes: Int, scratch: UnsafeMutablePointer<Float>,
                           scratchPerThread per: Int, threads: Int) {
        let tasks = min(planes, threads * 4)
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
