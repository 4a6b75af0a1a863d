#if canImport(Glibc)
import Glibc
#endif

/// The two loops training spends its time in, on 16-lane vectors with a scalar tail, and the softmax.
enum Vector {
    /// Logits → probabilities in place (the largest logit is subtracted first, so nothing overflows).
    static func softmax(_ p: UnsafeMutablePointer<Float>, count: Int) {
        var top = -Float.infinity
        for k in 0..<count { top = max(top, p[k]) }
        var sum: Float = 0
        for k in 0..<count {
            p[k] = expf(p[k] - top)
            sum += p[k]
        }
        for k in 0..<count { p[k] /= sum }
    }

    /// Σ a[i]·b[i], with four independent accumulators.
    @inline(__always)
    static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, count: Int) -> Float {
        let ra = UnsafeRawPointer(a), rb = UnsafeRawPointer(b)
        var s0 = SIMD16<Float>(), s1 = SIMD16<Float>(), s2 = SIMD16<Float>(), s3 = SIMD16<Float>()
        var i = 0
        while i + 64 <= count {
            s0.addProduct(ra.loadUnaligned(fromByteOffset: i * 4, as: SIMD16<Float>.self), rb.loadUnaligned(fromByteOffset: i * 4, as: SIMD16<Float>.self))
            s1.addProduct(ra.loadUnaligned(fromByteOffset: i * 4 + 64, as: SIMD16<Float>.self), rb.loadUnaligned(fromByteOffset: i * 4 + 64, as: SIMD16<Float>.self))
            s2.addProduct(ra.loadUnaligned(fromByteOffset: i * 4 + 128, as: SIMD16<Float>.self), rb.loadUnaligned(fromByteOffset: i * 4 + 128, as: SIMD16<Float>.self))
            s3.addProduct(ra.loadUnaligned(fromByteOffset: i * 4 + 192, as: SIMD16<Float>.self), rb.loadUnaligned(fromByteOffset: i * 4 + 192, as: SIMD16<Float>.self))
            i += 64
        }
        while i + 16 <= count {
            s0.addProduct(ra.loadUnaligned(fromByteOffset: i * 4, as: SIMD16<Float>.self), rb.loadUnaligned(fromByteOffset: i * 4, as: SIMD16<Float>.self))
            i += 16
        }
        var sum = ((s0 + s1) + (s2 + s3)).sum()
        while i < count {
            sum += a[i] * b[i]
            i += 1
        }
        return sum
    }

    /// y[i] += alpha·x[i].
    @inline(__always)
    static func axpy(_ alpha: Float, _ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, count: Int) {
        let rx = UnsafeRawPointer(x), ry = UnsafeMutableRawPointer(y)
        let a = SIMD16<Float>(repeating: alpha)
        var i = 0
        while i + 16 <= count {
            var v = ry.loadUnaligned(fromByteOffset: i * 4, as: SIMD16<Float>.self)
            v.addProduct(a, rx.loadUnaligned(fromByteOffset: i * 4, as: SIMD16<Float>.self))
            ry.storeBytes(of: v, toByteOffset: i * 4, as: SIMD16<Float>.self)
            i += 16
        }
        while i < count {
            y[i] += alpha * x[i]
            i += 1
        }
    }
}
