/// QuantizeLinear into the engine's centered representation: y = clamp(round(x / scale)), rounding
/// half to even, with [lower, upper] = [qmin − zp, qmax − zp]. Divides rather than multiplying by
/// 1/scale, as onnxruntime's kernel does, so values on a rounding boundary land where they land there.
public func quantize_f32(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, count: Int,
                         scale: Float, lower: Float, upper: Float) {
    let s = SIMD16<Float>(repeating: scale)
    let lo = SIMD16<Float>(repeating: lower), hi = SIMD16<Float>(repeating: upper)
    var i = 0
    while i + 16 <= count {
        let v = UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self)
        let q = simdClamp((v / s).rounded(.toNearestOrEven), lo, hi)
        UnsafeMutableRawPointer(y + i).storeBytes(of: q, as: SIMD16<Float>.self)
        i += 16
    }
    while i < count {
        y[i] = min(max((x[i] / scale).rounded(.toNearestOrEven), lower), upper)
        i += 1
    }
}

/// DequantizeLinear from the centered representation, and any other scaling: y = x · scale.
public func scale_f32(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, count: Int, scale: Float) {
    let s = SIMD16<Float>(repeating: scale)
    var i = 0
    while i + 16 <= count {
        let v = UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self)
        UnsafeMutableRawPointer(y + i).storeBytes(of: v * s, as: SIMD16<Float>.self)
        i += 16
    }
    while i < count { y[i] = x[i] * scale; i += 1 }
}

/// QLinearAdd on centered quantized values: y = clamp(round(a·ra + b·rb)), the product-sum as one
/// fused multiply-add, rounding half to even.
public func qlinear_add_f32(_ a: UnsafePointer<Float>, _ ra: Float, _ b: UnsafePointer<Float>, _ rb: Float,
                            _ y: UnsafeMutablePointer<Float>, count: Int, lower: Float, upper: Float) {
    let va = SIMD16<Float>(repeating: ra), vb = SIMD16<Float>(repeating: rb)
    let lo = SIMD16<Float>(repeating: lower), hi = SIMD16<Float>(repeating: upper)
    var i = 0
    while i + 16 <= count {
        let x = UnsafeRawPointer(a + i).loadUnaligned(as: SIMD16<Float>.self)
        let z = UnsafeRawPointer(b + i).loadUnaligned(as: SIMD16<Float>.self)
        let v = (x * va).addingProduct(z, vb).rounded(.toNearestOrEven)
        UnsafeMutableRawPointer(y + i).storeBytes(of: simdClamp(v, lo, hi), as: SIMD16<Float>.self)
        i += 16
    }
    while i < count {
        y[i] = min(max((a[i] * ra).addingProduct(b[i], rb).rounded(.toNearestOrEven), lower), upper)
        i += 1
    }
}
