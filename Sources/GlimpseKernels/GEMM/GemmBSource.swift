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

/// B of a 1×1 convolution with the batch folded into N: column j is pixel j % `imageColumns` of
/// image j / `imageColumns`, rows (channels) `imageColumns` floats apart, images `imageStride`
/// apart. A panel spans at most two images (`imageColumns` ≥ 32).
public struct FoldedRowMajorB: GemmBSource {
    public let base: UnsafePointer<Float>
    public let imageColumns: Int
    public let imageStride: Int
    public init(base: UnsafePointer<Float>, imageColumns: Int, imageStride: Int) {
        self.base = base
        self.imageColumns = imageColumns
        self.imageStride = imageStride
    }

    @inline(__always)
    public func panel(k0: Int, kc: Int, n0: Int, nc: Int, scratch: UnsafeMutablePointer<Float>) -> UnsafePointer<Float> {
        let image = n0 / imageColumns, col = n0 - image * imageColumns
        let first = min(nc, imageColumns - col)
        let src = base + image * imageStride
        if first == nc {
            return RowMajorB(base: src, rowStride: imageColumns).panel(k0: k0, kc: kc, n0: col, nc: nc, scratch: scratch)
        }
        // The panel straddles two images: the end of one image's rows, then the start of the next's.
        let next = src + imageStride
        for kk in 0..<kc {
            let d = scratch + kk * GemmTile.nr
            let row = (k0 + kk) * imageColumns
            for j in 0..<first { d[j] = src[row + col + j] }
            for j in first..<nc { d[j] = next[row + j - first] }
            for j in nc..<GemmTile.nr { d[j] = 0 }
        }
        return UnsafePointer(scratch)
    }
}
