/// Supplies packed `kc × 32` panels of the B operand to the GEMM driver.
public protocol GemmBSource {
    /// Returns the panel for rows `k0..<k0+kc` and columns `n0..<n0+nc` (nc ≤ 32), packing it
    /// into `scratch` (kc·32 floats, 64-byte aligned) if needed.
    func panel(k0: Int, kc: Int, n0: Int, nc: Int, scratch: UnsafeMutablePointer<Float>) -> UnsafePointer<Float>
}

/// B already packed at load time (weights), `k` rows in total.
public struct PackedB: GemmBSource {
    public let base: UnsafePointer<Float>
    public let k: Int
    public init(base: UnsafePointer<Float>, k: Int) {
        self.base = base
        self.k = k
    }

    @inline(__always)
    public func panel(k0: Int, kc: Int, n0: Int, nc: Int, scratch: UnsafeMutablePointer<Float>) -> UnsafePointer<Float> {
        base + (n0 / GemmTile.nr) * k * GemmTile.nr + k0 * GemmTile.nr
    }
}

/// B as a row-major matrix with rows `rowStride` floats apart (e.g. a 1×1 convolution's input, whose
/// rows are channels of H·W contiguous pixels).
public struct RowMajorB: GemmBSource {
    public let base: UnsafePointer<Float>
    public let rowStride: Int
    public init(base: UnsafePointer<Float>, rowStride: Int) {
        self.base = base
        self.rowStride = rowStride
    }

    @inline(__always)
    public func panel(k0: Int, kc: Int, n0: Int, nc: Int, scratch: UnsafeMutablePointer<Float>) -> UnsafePointer<Float> {
        var src = base + k0 * rowStride + n0
        var dst = scratch
        if nc == GemmTile.nr {
            for _ in 0..<kc {
                let s = UnsafeRawPointer(src)
                let d = UnsafeMutableRawPointer(dst)
                d.storeBytes(of: s.loadUnaligned(as: SIMD16<Float>.self), as: SIMD16<Float>.self)
                d.storeBytes(of: s.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self), toByteOffset: 64, as: SIMD16<Float>.self)
                src += rowStride
                dst += GemmTile.nr
            }
        } else {
            for _ in 0..<kc {
                for j in 0..<nc { dst[j] = src[j] }
                for j in nc..<GemmTile.nr { dst[j] = 0 }
                src += rowStride
                dst += GemmTile.nr
            }
        }
        return UnsafePointer(scratch)
    }
}
