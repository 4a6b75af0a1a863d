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
/// rows are channels of H·W contiguous pixels). With `rowScale`, row k is multiplied by
/// `rowScale[k]` as it is packed (a squeeze-and-excitation scale fused into the convolution).
public struct RowMajorB: GemmBSource {
    public let base: UnsafePointer<Float>
    public let rowStride: Int
    public let rowScale: UnsafePointer<Float>?
    public init(base: UnsafePointer<Float>, rowStride: Int, rowScale: UnsafePointer<Float>? = nil) {
        self.base = base
        self.rowStride = rowStride
        self.rowScale = rowScale
    }

    @inline(__always)
    public func panel(k0: Int, kc: Int, n0: Int, nc: Int, scratch: UnsafeMutablePointer<Float>) -> UnsafePointer<Float> {
        if let rowScale {
            Self.copy(base + k0 * rowStride + n0, rowStride: rowStride, kc: kc, nc: nc, into: scratch, scale: rowScale + k0)
        } else {
            Self.copy(base + k0 * rowStride + n0, rowStride: rowStride, kc: kc, nc: nc, into: scratch, scale: nil)
        }
        return UnsafePointer(scratch)
    }

    /// Copies `kc` rows of `nc` floats into a zero-padded `kc × 32` panel, row k times `scale[k]`
    /// when given (the two call sites keep the unscaled copy free of the multiply).
    @inline(__always)
    static func copy(_ source: UnsafePointer<Float>, rowStride: Int, kc: Int, nc: Int, into scratch: UnsafeMutablePointer<Float>,
                     scale: UnsafePointer<Float>?) {
        var src = source
        var dst = scratch
        if nc == GemmTile.nr {
            for kk in 0..<kc {
                let s = UnsafeRawPointer(src)
                let d = UnsafeMutableRawPointer(dst)
                var v0 = s.loadUnaligned(as: SIMD16<Float>.self)
                var v1 = s.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
                if let scale {
                    let f = SIMD16<Float>(repeating: scale[kk])
                    v0 *= f
                    v1 *= f
                }
                d.storeBytes(of: v0, as: SIMD16<Float>.self)
                d.storeBytes(of: v1, toByteOffset: 64, as: SIMD16<Float>.self)
                src += rowStride
                dst += GemmTile.nr
            }
        } else {
            for kk in 0..<kc {
                let f = scale?[kk] ?? 1
                for j in 0..<nc { dst[j] = src[j] * f }
                for j in nc..<GemmTile.nr { dst[j] = 0 }
                src += rowStride
                dst += GemmTile.nr
            }
        }
    }
}

/// B of a 1×1 convolution with the batch folded into N: column j is pixel j % `imageColumns` of
/// image j / `imageColumns`, rows (channels) `imageColumns` floats apart, images `imageStride`
/// apart. A panel spans at most two images (`imageColumns` ≥ 32). With `rowScale`, image i's row k
/// is multiplied by `rowScale[i·rowScaleStride + k]` (see `RowMajorB`).
public struct FoldedRowMajorB: GemmBSource {
    public let base: UnsafePointer<Float>
    public let imageColumns: Int
    public let imageStride: Int
    public let rowScale: UnsafePointer<Float>?
    public let rowScaleStride: Int
    public init(base: UnsafePointer<Float>, imageColumns: Int, imageStride: Int,
                rowScale: UnsafePointer<Float>? = nil, rowScaleStride: Int = 0) {
        self.base = base
        self.imageColumns = imageColumns
        self.imageStride = imageStride
        self.rowScale = rowScale
        self.rowScaleStride = rowScaleStride
    }

    @inline(__always)
    public func panel(k0: Int, kc: Int, n0: Int, nc: Int, scratch: UnsafeMutablePointer<Float>) -> UnsafePointer<Float> {
        let image = n0 / imageColumns, col = n0 - image * imageColumns
        let first = min(nc, imageColumns - col)
        let src = base + image * imageStride
        let scale = rowScale.map { $0 + image * rowScaleStride }
        if first == nc {
            return RowMajorB(base: src, rowStride: imageColumns, rowScale: scale).panel(k0: k0, kc: kc, n0: col, nc: nc, scratch: scratch)
        }
        // The panel straddles two images: the end of one image's rows, then the start of the next's.
        let next = src + imageStride
        let nextScale = scale.map { $0 + rowScaleStride }
        for kk in 0..<kc {
            let d = scratch + kk * GemmTile.nr
            let row = (k0 + kk) * imageColumns
            let f = scale?[k0 + kk] ?? 1, g = nextScale?[k0 + kk] ?? 1
            for j in 0..<first { d[j] = src[row + col + j] * f }
            for j in first..<nc { d[j] = next[row + j - first] * g }
            for j in nc..<GemmTile.nr { d[j] = 0 }
        }
        return UnsafePointer(scratch)
    }
}
