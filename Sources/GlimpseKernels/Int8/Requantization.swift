#if GLIMPSE_VNNI
import CGlimpseSIMD
#endif

/// Requantization of int32 sums to uint8, as ONNX QLinearConv / QLinearMatMul specify:
/// `y = saturate(round_half_even(Float(acc + bias[c]) · scale[c]) + zeroPoint)`.
///
/// `bias` already holds the zero-point corrections folded at load (`bias − zx·Σw`), so the kernels
/// add it to raw u8 × s8 sums. The float product is not fused with anything (no FMA), and the clamp
/// happens in float before the conversion to integer, so the vector store and the scalar
/// reference (`requantize`) agree bit for bit.
public struct Requantization: Sendable {
    public var bias: [Int32]
    public var scale: [Float]
    public var zeroPoint: Int32
    /// Output range: [0, 255] for uint8 (narrower with a fused clip).
    public var lower: Int32
    public var upper: Int32

    public init(bias: [Int32], scale: [Float], zeroPoint: Int32, lower: Int32 = 0, upper: Int32 = 255) {
        precondition(bias.count == scale.count, "one bias and one scale per channel")
        self.bias = bias
        self.scale = scale
        self.zeroPoint = zeroPoint
        self.lower = lower
        self.upper = upper
    }

    /// Bounds of the rounded value before the zero point is added.
    @inlinable public var floatLower: Float { Float(lower - zeroPoint) }
    @inlinable public var floatUpper: Float { Float(upper - zeroPoint) }

    /// The scalar reference for channel `c`.
    @inlinable
    public func requantize(_ acc: Int32, channel c: Int) -> UInt8 {
        let v = (Float(acc &+ bias[c]) * scale[c]).rounded(.toNearestOrEven)
        let r = Swift.min(Swift.max(v, floatLower), floatUpper)
        return UInt8(truncatingIfNeeded: Int32(r) + zeroPoint)
    }
}

/// The per-channel data of a `Requantization` as raw pointers, for kernels (owned by a `RequantStorage`).
@frozen public struct RequantPointers {
    public let bias: UnsafePointer<Int32>
    public let scale: UnsafePointer<Float>
    public let zeroPoint: Int32
    public let lower: Float
    public let upper: Float

    /// Sixteen sums of channel `c` to sixteen bytes.
    @inlinable @inline(__always)
    public func store16(_ acc: SIMD16<Int32>, channel c: Int) -> SIMD16<UInt8> {
        store16Biased(acc &+ SIMD16<Int32>(repeating: bias[c]), channel: c)
    }

    /// `store16` for sums that already include the bias (kernels that start their accumulators at it).
    @inlinable @inline(__always)
    public func store16Biased(_ acc: SIMD16<Int32>, channel c: Int) -> SIMD16<UInt8> {
        // Clamping before rounding equals rounding before clamping: the bounds are integers.
        let f = simdFloat(acc) * SIMD16<Float>(repeating: scale[c])
        let r = simdClampFinite(f, SIMD16<Float>(repeating: lower), SIMD16<Float>(repeating: upper))
        return simdNarrowU8(simdRoundToInt32(r) &+ SIMD16<Int32>(repeating: zeroPoint))
    }

#if GLIMPSE_VNNI
    /// `lower` as a byte (the zero point added back).
    @inlinable public var lowerByte: UInt8 { UInt8(clamping: Int32(lower) + zeroPoint) }

    /// The first half of `store16Biased` for kernels that pack several vectors at once: the scaled
    /// sums clamped above only, rounded, plus the zero point, still as int32. Lanes below `lower`
    /// are left to the caller's saturating pack and byte maximum.
    @inlinable @inline(__always)
    public func scaledToZeroPoint(_ acc: SIMD16<Int32>, _ scale: SIMD16<Float>) -> SIMD8<Int64> {
        let f = glimpse_min_f32_512(simdFloat(acc) * scale, SIMD16<Float>(repeating: upper))
        return unsafeBitCast(simdRoundToInt32(f) &+ SIMD16<Int32>(repeating: zeroPoint), to: SIMD8<Int64>.self)
    }
#endif

    /// Stores the first `count` (≤ 16) bytes of `v` at `dst`.
    @inlinable @inline(__always)
    public static func store(_ v: SIMD16<UInt8>, to dst: UnsafeMutablePointer<UInt8>, count: Int) {
        if count >= 16 {
            UnsafeMutableRawPointer(dst).storeBytes(of: v, as: SIMD16<UInt8>.self)
        } else {
#if GLIMPSE_VNNI
            glimpse_store_u8_first(dst, unsafeBitCast(v, to: SIMD2<Int64>.self), Int32(max(count, 0)))
#else
            withUnsafeBytes(of: v) { bytes in
                if let base = bytes.baseAddress { UnsafeMutableRawPointer(dst).copyMemory(from: base, byteCount: max(count, 0)) }
            }
#endif
        }
    }
}

/// Owns the arrays behind `RequantPointers`.
public final class RequantStorage: @unchecked Sendable {
    public let requantization: Requantization
    private let bias: UnsafeMutablePointer<Int32>
    private let scale: UnsafeMutablePointer<Float>

    public init(_ r: Requantization) {
        requantization = r
        bias = .allocate(capacity: max(r.bias.count, 1))
        scale = .allocate(capacity: max(r.scale.count, 1))
        bias.initialize(from: r.bias, count: r.bias.count)
        scale.initialize(from: r.scale, count: r.scale.count)
    }

    deinit {
        bias.deallocate()
        scale.deallocate()
    }

    public var pointers: RequantPointers {
        RequantPointers(bias: bias, scale: scale, zeroPoint: requantization.zeroPoint,
                        lower: requantization.floatLower, upper: requantization.floatUpper)
    }
}
