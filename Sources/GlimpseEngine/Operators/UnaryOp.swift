import GlimpseKernels
import GlimpseTensor

/// Element-wise activation. Clip may take its bounds from constant inputs 1 and 2 (opset ≥ 11).
public final class UnaryOp: Operator {
    public let opType: String
    public var kind: UnaryKind

    public init(opType: String, kind: UnaryKind) {
        self.opType = opType
        self.kind = kind
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        guard inputs[0].dtype == .float32 else { throw EngineError("expects float32, got \(inputs[0].dtype)") }
        for i in inputs.indices.dropFirst() where inputs[i] != .absent && constants[i] == nil {
            throw EngineError("input \(i) (a bound) must be constant")
        }
        return [inputs[0]]
    }

    /// Clip bounds from inputs (missing ones keep the attribute values).
    public func resolvedKind(_ constants: [Tensor?]) throws -> UnaryKind {
        guard case .clip(var lo, var hi) = kind else { return kind }
        for (i, _) in constants.enumerated().dropFirst() where i <= 2 {
            guard let c = constants[i] else { continue }
            guard c.count == 1 else { throw EngineError("Clip bound must be a scalar") }
            if i == 1 { lo = c.floats()[0] } else { hi = c.floats()[0] }
        }
        return .clip(lo, hi)
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let k = try resolvedKind(ctx.inputs)
        let src = UnsafePointer(x.f32), dst = ctx.outputs[0].f32, n = x.count
        let chunks = n >= 1 << 16 ? ctx.threads : 1
        return ClosureKernel { pool in
            pool.parallelFor(chunks) { c in
                let lo = n * c / chunks, hi = n * (c + 1) / chunks
                f32_unary(k, src + lo, dst + lo, count: hi - lo)
            }
        }
    }
}
