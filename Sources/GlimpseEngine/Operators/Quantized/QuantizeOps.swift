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
        let inner = p.isPerTensor ? x.count : (a + 1 <= dims.count ? dims[(a + 1)...].reduce(1, *) : 1)
        let channels = p.isPerTensor ? 1 : dims[a]
        let out = ctx.outputs[0].f32, n = x.count, quantize = isQuantize
        let source = x
        if !quantize && (source.dtype == .int8 || source.dtype == .uint8) && n % (inner * channels) == 0 {
            // Constant integer weights (folded at load): (q − zp) · scale, channel by channel.
            let signed = source.dtype == .int8
            let q = source.rawPointer.assumingMemoryBound(to: UInt8.self)
            return ClosureKernel { _ in
                var i = 0
                for _ in 0..<(n / (inner * channels)) {
                    for c in 0..<channels {
                        let s = p.scale(c), zp = Float(p.zeroPoint(c))
                        for _ in 0..<inner {
                            out[i] = ((signed ? Float(Int8(bitPattern: q[i])) : Float(q[i])) - zp) * s
                            i += 1
                        }
                    }
                }
            }
        }
        if source.dtype == .float32 && n % (inner * channels) == 0 {
            // Runtime values (centered integers, or floats to quantize), one channel's run at a time.
            let src = UnsafePointer(source.f32), outer = n / (inner * channels)
            return ClosureKernel { _ in
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
        }
        return ClosureKernel { _ in
            // Integer inputs (constants) are made centered first.
            let centered = source.dtype == .float32 || quantize ? nil : QuantParams.centered(source, p, axis: a)
            let src = centered?.f32 ?? source.f32
            for i in 0..<n {
                let c = (i / inner) % channels
                if quantize {
                    let (lo, hi) = p.bounds(c)
                    let q = (src[i] / p.scale(c)).rounded(.toNearestOrEven)
                    out[i] = min(max(q, lo), hi)
                } else {
                    out[i] = src[i] * p.scale(c)
                }
            }
        }
    }
}
