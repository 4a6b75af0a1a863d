import GlimpseTensor

/// Quantization parameters read from constant scale / zero-point inputs.
///
/// Representation: inside the engine a quantized activation is a float32 tensor holding
/// `q − zero_point` (an exact small integer). Padding and zero then coincide, so convolutions and
/// GEMMs run unchanged on it, and requantization is a fused epilogue: scale, round half to even,
/// clamp to `[qmin − zp, qmax − zp]`, as onnxruntime's integer kernels do.
public struct QuantParams {
    public var scales: [Float]
    public var zeroPoints: [Int]
    public var dtype: DType

    public init(scale: Tensor?, zeroPoint: Tensor?, what: String) throws {
        guard let scale, scale.dtype == .float32 else { throw EngineError("\(what) scale must be a float32 constant") }
        scales = scale.floats()
        guard !scales.isEmpty else { throw EngineError("\(what) scale is empty") }
        if let zp = zeroPoint {
            guard zp.dtype == .uint8 || zp.dtype == .int8 || zp.dtype == .int32 else {
                throw EngineError("\(what) zero point must be int8/uint8")
            }
            zeroPoints = zp.floats().map { Int($0) }
            dtype = zp.dtype == .int32 ? .int32 : zp.dtype
            guard zeroPoints.count == scales.count || zeroPoints.count == 1 else {
                throw EngineError("\(what) scale and zero point sizes differ")
            }
        } else {
            zeroPoints = [0]
            dtype = .uint8
        }
    }

    public var isPerTensor: Bool { scales.count == 1 }
    public func scale(_ i: Int) -> Float { scales[scales.count == 1 ? 0 : i] }
    public func zeroPoint(_ i: Int) -> Int { zeroPoints[zeroPoints.count == 1 ? 0 : i] }

    /// Centered bounds [qmin − zp, qmax − zp] for channel i.
    public func bounds(_ i: Int = 0) -> (Float, Float) {
        let zp = zeroPoint(i)
        switch dtype {
        case .int8: return (Float(-128 - zp), Float(127 - zp))
        case .int32: return (-.infinity, .infinity)
        default: return (Float(0 - zp), Float(255 - zp))
        }
    }

    /// Centered float values of a constant quantized tensor (`q − zp`, per channel along `axis`).
    public static func centered(_ t: Tensor, _ p: QuantParams, axis: Int) -> Tensor {
        let out = Tensor(shape: t.shape, dtype: .float32)
        let values = t.floats()
        if t.dtype == .float32 { return t }   // already centered (engine representation)
        let dims = t.shape.dims
        let a = axis < 0 ? axis + dims.count : axis
        let inner = a + 1 <= dims.count ? dims[(a + 1)...].reduce(1, *) : 1
        let channels = a < dims.count ? dims[a] : 1
        for i in 0..<values.count {
            let c = p.zeroPoints.count == 1 ? 0 : (i / inner) % channels
            out.f32[i] = values[i] - Float(p.zeroPoints[c])
        }
        return out
    }
}
