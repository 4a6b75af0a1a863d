#if GLIMPSE_VNNI
import CGlimpseSIMD
#endif

/// uint8 → uint8 requantization from one (scale, zero point) to another, by a 256-entry table.
public enum QU8RequantizeTable {
    /// `table[q] = Q_to(DQ_from(q))` computed by the dequantize and quantize kernels themselves
    /// (`qu8_dequantize_f32`, `qu8_quantize_f32`), so a lookup gives bit for bit what the float
    /// round trip through them gives.
    public static func make(fromScale: Float, fromZeroPoint: Int32, toScale: Float, toZeroPoint: Int32) -> [UInt8] {
        let q = (0..<256).map { UInt8($0) }
        var f = [Float](repeating: 0, count: 256)
        var table = [UInt8](repeating: 0, count: 256)
        q.withUnsafeBufferPointer { src in
            f.withUnsafeMutableBufferPointer { dst in
                qu8_dequantize_f32(src.baseAddress!, dst.baseAddress!, count: 256, scale: fromScale, zeroPoint: fromZeroPoint)
            }
        }
        f.withUnsafeBufferPointer { src in
            table.withUnsafeMutableBufferPointer { dst in
                qu8_quantize_f32(src.baseAddress!, dst.baseAddress!, count: 256, scale: toScale, zeroPoint: toZeroPoint)
            }
        }
        return table
    }
}

/// `y[i] = table[x[i]]` for a 256-byte table. With AVX-512 (`GLIMPSE_VNNI` targets), 64 bytes at a
/// time: two `vpermt2b` look up the table's low and high halves by the index's low 7 bits, and the
/// index's top bit picks between them.
public func qu8_lookup(_ x: UnsafePointer<UInt8>, _ y: UnsafeMutablePointer<UInt8>, count: Int, table: UnsafePointer<UInt8>) {
    var i = 0
#if GLIMPSE_VNNI
    @inline(__always) func load(_ p: UnsafeRawPointer) -> SIMD8<Int64> { p.loadUnaligned(as: SIMD8<Int64>.self) }
    let t0 = load(table), t1 = load(table + 64), t2 = load(table + 128), t3 = load(table + 192)
    while i + 64 <= count {
        UnsafeMutableRawPointer(y + i).storeBytes(of: glimpse_lookup256_u8_512(load(x + i), t0, t1, t2, t3), as: SIMD8<Int64>.self)
        i += 64
    }
#endif
    while i < count {
        y[i] = table[Int(x[i])]
        i += 1
    }
}

/// Scalar reference of `qu8_lookup`.
public func qu8_lookup_reference(_ x: UnsafePointer<UInt8>, _ y: UnsafeMutablePointer<UInt8>, count: Int, table: UnsafePointer<UInt8>) {
    for i in 0..<count { y[i] = table[Int(x[i])] }
}
