import Foundation
import GlimpseKernels
import GlimpseTensor

/// QuantizeLinear (float → centered quantized) and DequantizeLinear (quantized → float).
/// Constant integer inputs (weights) are read as true integers; runtime ones are centered floats.
public final class QuantizeOp: Operator {
    public let opType: String
    public let isQuantize: Bool
    public let axis: Int
    public init(quantize: Bool, axis: Int) {
        self.opType = quantize ? "QuantizeLinear" : "DequantizeLinear"
        self.isQuantize = quantize
        self.axis = axis
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let p = try QuantParams(scale: constants[1], zeroPoint: inputs.count > 2 ? constants[2] : nil, what: opType)
        let dims = inputs[0].shape
        if isQuantize && inputs[0].dtype != .float32 {
            throw EngineError("QuantizeLinear input must be float, not \(inputs[0].dtype.rawValue)")
        }
        if !p.isPerTensor {
            let a = axis < 0 ? axis + dims.count : axis
            guard a >= 0, a < dims.count, dims[a] == p.scales.count else {
                throw EngineError("\(p.scales.count) scales do not match axis \(axis) of input shape \(dims)")
            }
        }
        return [ValueType(dims, .float32)]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let p = try QuantParams(scale: ctx.input(1), zeroPoint: ctx.input(2), what: opType)
        let dims = x.shape.dims
        let a = axis < 0 ? axis + dims.count : axis
        // inferTypes checked that per-channel scales match dims[a], so the tensor is outer × channels × inner.
        let inner = p.isPerTensor ? x.count : (a + 1 <= dims.count ? dims[(a + 1)...].reduce(1, *) : 1)
        let channels = p.isPerTensor ? 1 : dims[a]
        let outer = x.count / max(1, inner * channels)
        let out = ctx.outputs[0].f32, quantize = isQuantize
        func run(_ src: UnsafePointer<Float>) {
            for o in 0..<outer {
                for c in 0..<channels {
                    let base = (o * channels + c) * inner
                    if quantize {
                        let (lo, hi) = p.bounds(c)
                        quantize_f32(src + base, out + base, count: inner, scale: p.scale(c), lower: lo, upper: hi)
                    } else {
                        scale_f32(src + base, out + base, count: inner, scale: p.scale(c))
                    }
                }
            }
        }
        if x.dtype == .uint8 && !quantize && p.isPerTensor {
            // uint8 activations of the int8 operators.
            let src = UnsafePointer(x.pointer(as: UInt8.self)), n = x.count
            let s = p.scale(0), z = Int32(p.zeroPoint(0))
            return ClosureKernel { _ in qu8_dequantize_f32(src, out, count: n, scale: s, zeroPoint: z) }
        }
        if x.dtype == .float32 {
            // Runtime values: centered integers to dequantize, or floats to quantize.
            let src = UnsafePointer(x.f32)
            return ClosureKernel { _ in run(src) }
        }
        // Integer constants (weights, biases; folded at load): q − zp as floats, then scaled.
        return ClosureKernel { _ in
            let centered = QuantParams.centered(x, p, axis: a)
            run(centered.f32)
        }
    }
}
