import Foundation
import GlimpseTensor

/// Softmax / LogSoftmax. Opset < 13 coerces the input to 2-D at `axis` (softmax over all trailing
/// dims); opset ≥ 13 normalizes along the single axis.
public final class SoftmaxOp: Operator {
    public let opType: String
    public let axis: Int
    public let coerce2D: Bool
    public let isLog: Bool

    public init(opType: String, axis: Int, coerce2D: Bool, isLog: Bool) {
        self.opType = opType
        self.axis = axis
        self.coerce2D = coerce2D
        self.isLog = isLog
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let r = inputs[0].shape.count
        let a = axis < 0 ? axis + r : axis
        guard a >= 0 && a < max(r, 1) else { throw EngineError("axis \(axis) out of range for rank \(r)") }
        return [inputs[0]]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let dims = x.shape.dims
        let a = axis < 0 ? axis + dims.count : axis
        let outer = dims[..<a].reduce(1, *)
        let len = coerce2D ? dims[a...].reduce(1, *) : dims[a]
        let inner = coerce2D ? 1 : dims[(a + 1)...].reduce(1, *)
        let src = UnsafePointer(x.f32), dst = ctx.outputs[0].f32, isLog = self.isLog
        return ClosureKernel { _ in
            for o in 0..<outer {
                for i in 0..<inner {
                    let base = o * len * inner + i
                    var m = -Float.infinity
                    for j in 0..<len { m = max(m, src[base + j * inner]) }
                    var sum: Float = 0
                    for j in 0..<len {
                        let e = Foundation.exp(src[base + j * inner] - m)
                        dst[base + j * inner] = e
                        sum += e
                    }
                    if isLog {
                        let l = Foundation.log(sum)
                        for j in 0..<len { dst[base + j * inner] = src[base + j * inner] - m - l }
                    } else {
                        let inv = 1 / sum
                        for j in 0..<len { dst[base + j * inner] *= inv }
                    }
                }
            }
        }
    }
}
