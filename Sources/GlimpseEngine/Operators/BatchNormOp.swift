import GlimpseTensor

/// BatchNormalization (inference): y = (x − mean)·γ/√(var + ε) + β per channel (axis 1).
/// Inputs: x, scale, bias, mean, var — all but x constant. Usually folded into the preceding Conv.
public final class BatchNormOp: Operator {
    public var opType: String { "BatchNormalization" }
    public let epsilon: Float
    public init(epsilon: Float) { self.epsilon = epsilon }

    /// Per-channel multiplier and offset.
    public func affine(_ constants: [Tensor?]) throws -> (scale: [Float], shift: [Float]) {
        guard constants.count >= 5, let g = constants[1], let b = constants[2], let m = constants[3], let v = constants[4] else {
            throw EngineError("scale, bias, mean and var must be constants")
        }
        let c = g.count
        guard b.count == c, m.count == c, v.count == c else { throw EngineError("parameter sizes differ") }
        let gv = g.floats(), bv = b.floats(), mv = m.floats(), vv = v.floats()
        var scale = [Float](repeating: 0, count: c), shift = scale
        for i in 0..<c {
            scale[i] = gv[i] / (vv[i] + epsilon).squareRoot()
            shift[i] = bv[i] - mv[i] * scale[i]
        }
        return (scale, shift)
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let (s, _) = try affine(constants)
        guard inputs[0].shape.count >= 2, inputs[0].shape[1] == s.count else {
            throw EngineError("input \(inputs[0].shape) does not have \(s.count) channels")
        }
        return [inputs[0]]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let (scale, shift) = try affine(ctx.inputs)
        let n = x.shape[0], c = x.shape[1], inner = x.count / max(n * c, 1)
        let src = UnsafePointer(x.f32), dst = ctx.outputs[0].f32
        return ClosureKernel { _ in
            for b in 0..<n {
                for ch in 0..<c {
                    let base = (b * c + ch) * inner
                    let s = scale[ch], t = shift[ch]
                    for i in 0..<inner { dst[base + i] = src[base + i] * s + t }
                }
            }
        }
    }
}
