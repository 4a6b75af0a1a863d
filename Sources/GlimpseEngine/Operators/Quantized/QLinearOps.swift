import GlimpseKernels
import GlimpseTensor

/// QLinearConv / QLinearMatMul as imported: attributes only. `LowerQuantizedOps` replaces them by
/// float ConvOp / GemmOp with centered weights and a requantizing epilogue.
public final class QLinearPlaceholderOp: Operator {
    public let opType: String
    public let window: WindowAttributes
    public let group: Int
    public init(opType: String, window: WindowAttributes = WindowAttributes(), group: Int = 1) {
        self.opType = opType
        self.window = window
        self.group = group
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        throw EngineError("weights, scales and zero points must be constants")
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        throw EngineError("weights, scales and zero points must be constants")
    }
}

/// com.microsoft QLinearAdd on centered quantized tensors:
/// y = clamp(round((a−za)·sa/sy + (b−zb)·sb/sy), qmin−zy, qmax−zy).
public final class QLinearAddOp: Operator {
    public var opType: String { "QLinearAdd" }
    public init() {}

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        guard inputs.count >= 7 else { throw EngineError("expects 8 inputs") }
        for i in [1, 4, 6] where constants[i] == nil { throw EngineError("scales must be constants") }
        return [ValueType(try Broadcast.shape(inputs[0].shape, inputs[3].shape))]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let a0 = ctx.inputs[0], let b0 = ctx.input(3) else { throw EngineError("missing operand") }
        let pa = try QuantParams(scale: ctx.input(1), zeroPoint: ctx.input(2), what: "A")
        let pb = try QuantParams(scale: ctx.input(4), zeroPoint: ctx.input(5), what: "B")
        let py = try QuantParams(scale: ctx.input(6), zeroPoint: ctx.input(7), what: "Y")
        let a = QuantParams.centered(a0, pa, axis: 0), b = QuantParams.centered(b0, pb, axis: 0)
        let ra = pa.scale(0) / py.scale(0), rb = pb.scale(0) / py.scale(0)
        let (lo, hi) = py.bounds()
        let out = ctx.outputs[0]
        let plan = Broadcast.Plan(out: out.shape.dims, a: a.shape.dims, b: b.shape.dims)
        let xa = UnsafePointer(a.f32), xb = UnsafePointer(b.f32), y = out.f32
        if a.count == out.count && b.count == out.count {
            // Same shapes (residual connections): one vector pass.
            let n = out.count
            return ClosureKernel { _ in
                withExtendedLifetime((a, b)) {
                    qlinear_add_f32(xa, ra, xb, rb, y, count: n, lower: lo, upper: hi)
                }
            }
        }
        return ClosureKernel { _ in
            withExtendedLifetime((a, b)) {
                plan.forEach { o, ia, ib in
                    let v = (xa[ia] * ra).addingProduct(xb[ib], rb).rounded(.toNearestOrEven)
                    y[o] = min(max(v, lo), hi)
                }
            }
        }
    }
}

/// com.microsoft QLinearGlobalAveragePool (NCHW): y = clamp(round(Σ(x−zx) · sx/(sy·HW))).
public final class QLinearGlobalAveragePoolOp: Operator {
    public var opType: String { "QLinearGlobalAveragePool" }
    public init() {}

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let x = inputs[0].shape
        guard x.count >= 3 else { throw EngineError("input must be NCHW") }
        return [ValueType([x[0], x[1]] + [Int](repeating: 1, count: x.count - 2))]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let px = try QuantParams(scale: ctx.input(1), zeroPoint: ctx.input(2), what: "X")
        let py = try QuantParams(scale: ctx.input(3), zeroPoint: ctx.input(4), what: "Y")
        let planes = x.shape[0] * x.shape[1], size = x.count / max(planes, 1)
        let scale = px.scale(0) / (py.scale(0) * Float(size))
        let (lo, hi) = py.bounds()
        let src = UnsafePointer(x.f32), dst = ctx.outputs[0].f32
        return ClosureKernel { _ in
            for p in 0..<planes {
                var sum: Float = 0
                for i in 0..<size { sum += src[p * size + i] }
                dst[p] = min(max((sum * scale).rounded(.toNearestOrEven), lo), hi)
            }
        }
    }
}
