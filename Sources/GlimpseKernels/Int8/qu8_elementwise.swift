/// uint8 elementwise kernels of quantized graphs, each followed by its scalar reference. The vector
/// and scalar forms do the same float operations in the same order, so they agree bit for bit.

/// QuantizeLinear to uint8: `y = saturate(round_half_even(x / scale) + zp)`.
public func qu8_quantize_f32(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<UInt8>, count: Int, scale: Float, zeroPoint: Int32) {
    let lo = Float(-zeroPoint), hi = Float(255 - zeroPoint)
    let s = SIMD16<Float>(repeating: scale)
    var i = 0
    while i + 16 <= count {
        let v = simdClamp(UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self) / s, SIMD16<Float>(repeating: lo),
                          SIMD16<Float>(repeating: hi))
        UnsafeMutableRawPointer(y + i).storeBytes(of: simdNarrowU8(simdRoundToInt32(v) &+ zeroPoint), as: SIMD16<UInt8>.self)
        i += 16
    }
    while i < count { y[i] = qu8QuantizeReference(x[i], scale: scale, zeroPoint: zeroPoint); i += 1 }
}

@inlinable
public func qu8QuantizeReference(_ x: Float, scale: Float, zeroPoint: Int32) -> UInt8 {
    var v = (x / scale).rounded(.toNearestOrEven)
    if v.isNaN { v = 0 }
    v = min(max(v, Float(-zeroPoint)), Float(255 - zeroPoint))
    return UInt8(truncatingIfNeeded: Int32(v) + zeroPoint)
}

/// DequantizeLinear from uint8: `y = (q − zp) · scale`.
public func qu8_dequantize_f32(_ x: UnsafePointer<UInt8>, _ y: UnsafeMutablePointer<Float>, count: Int, scale: Float, zeroPoint: Int32) {
    var i = 0
    let z = SIMD16<Int32>(repeating: zeroPoint), s = SIMD16<Float>(repeating: scale)
    while i + 16 <= count {
        UnsafeMutableRawPointer(y + i).storeBytes(of: simdFloat(simdLoadU8(x + i) &- z) * s, as: SIMD16<Float>.self)
        i += 16
    }
    while i < count { y[i] = Float(Int32(x[i]) - zeroPoint) * scale; i += 1 }
}

/// com.microsoft QLinearAdd on uint8:
/// `y = saturate(round_half_even((a − za)·ra + (b − zb)·rb) + zy)` with `ra = sa/sy`, `rb = sb/sy`.
/// `b` has `count` elements, or `bCount` elements repeated along `a` (a trailing broadcast).
public struct QU8Add: Sendable {
    public let ra: Float, rb: Float
    public let za: Int32, zb: Int32, zy: Int32
    public init(ra: Float, za: Int32, rb: Float, zb: Int32, zy: Int32) {
        self.ra = ra; self.za = za; self.rb = rb; self.zb = zb; self.zy = zy
    }

    @inlinable
    public func reference(_ a: UInt8, _ b: UInt8) -> UInt8 {
        let fa = Float(Int32(a) - za), fb = Float(Int32(b) - zb)
        let v = (fa * ra).addingProduct(fb, rb).rounded(.toNearestOrEven)
        let r = min(max(v, Float(-zy)), Float(255 - zy))
        return UInt8(truncatingIfNeeded: Int32(r) + zy)
    }

    public func run(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ y: UnsafeMutablePointer<UInt8>, count: Int) {
        let lo = Float(-zy), hi = Float(255 - zy)
        let vza = SIMD16<Int32>(repeating: za), vzb = SIMD16<Int32>(repeating: zb)
        let vra = SIMD16<Float>(repeating: ra), vrb = SIMD16<Float>(repeating: rb)
        var i = 0
        while i + 16 <= count {
            let qa = simdLoadU8(a + i), qb = simdLoadU8(b + i)
            var v = (simdFloat(qa &- vza) * vra).addingProduct(simdFloat(qb &- vzb), vrb)
            v = simdClamp(v, SIMD16<Float>(repeating: lo), SIMD16<Float>(repeating: hi))
            UnsafeMutableRawPointer(y + i).storeBytes(of: simdNarrowU8(simdRoundToInt32(v) &+ zy), as: SIMD16<UInt8>.self)
            i += 16
        }
        while i < count { y[i] = reference(a[i], b[i]); i += 1 }
    }
}

/// com.microsoft QLinearGlobalAveragePool on one uint8 plane:
/// `y = saturate(round_half_even((Σx − zx·n) · sx/(sy·n)) + zy)`.
public struct QU8GlobalAveragePool: Sendable {
    public let zx: Int32, zy: Int32
    public let scale: Float
    public init(zx: Int32, zy: Int32, scale: Float) { self.zx = zx; self.zy = zy; self.scale = scale }

    @inline(__always)
    func finish(_ sum: Int32, count: Int) -> UInt8 {
        let v = (Float(sum &- zx &* Int32(truncatingIfNeeded: count)) * scale).rounded(.toNearestOrEven)
        let r = min(max(v, Float(-zy)), Float(255 - zy))
        return UInt8(truncatingIfNeeded: Int32(r) + zy)
    }

    public func reference(_ x: UnsafePointer<UInt8>, count: Int) -> UInt8 {
        var sum: Int32 = 0
        for i in 0..<count { sum &+= Int32(x[i]) }
        return finish(sum, count: count)
    }

    public func run(_ x: UnsafePointer<UInt8>, count: Int) -> UInt8 {
        var acc = SIMD16<Int32>()
        var i = 0
        while i + 16 <= count {
            acc &+= simdLoadU8(x + i)
            i += 16
        }
        var sum = acc.wrappedSum()
        while i < count { sum &+= Int32(x[i]); i += 1 }
        return finish(sum, count: count)
    }
}

/// Quantized values kept as centered floats (`q − zp`, the fp32 fallback's representation) to and
/// from uint8.
public func qu8_from_centered_f32(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<UInt8>, count: Int, zeroPoint: Int32) {
    let lo = Float(-zeroPoint), hi = Float(255 - zeroPoint)
    var i = 0
    while i + 16 <= count {
        let v = simdClamp(UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self), SIMD16<Float>(repeating: lo),
                          SIMD16<Float>(repeating: hi))
        UnsafeMutableRawPointer(y + i).storeBytes(of: simdNarrowU8(simdRoundToInt32(v) &+ zeroPoint), as: SIMD16<UInt8>.self)
        i += 16
    }
    for i in i..<count {
        var v = x[i].rounded(.toNearestOrEven)
        if v.isNaN { v = 0 }
        y[i] = UInt8(truncatingIfNeeded: Int32(min(max(v, lo), hi)) + zeroPoint)
    }
}

public func qu8_to_centered_f32(_ x: UnsafePointer<UInt8>, _ y: UnsafeMutablePointer<Float>, count: Int, zeroPoint: Int32) {
    var i = 0
    while i + 16 <= count {
        UnsafeMutableRawPointer(y + i).storeBytes(of: simdFloat(simdLoadU8(x + i) &- zeroPoint), as: SIMD16<Float>.self)
        i += 16
    }
    for i in i..<count { y[i] = Float(Int32(x[i]) - zeroPoint) }
}
