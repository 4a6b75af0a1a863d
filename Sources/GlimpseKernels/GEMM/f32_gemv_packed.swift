/// y = A·x for one column (N = 1: the 1×1 convolutions of squeeze-and-excitation blocks), reading
/// A in the GEMM's packed layout (`GemmPacking.packA`: K blocks of 6-row tiles, k-major in a
/// tile). The 32-column micro-kernel would compute 31 padding columns here; this reads each
/// packed weight once.
///
/// Each step loads 8 floats at a tile's k-th 6-row group (lanes 6 and 7 belong to the next group
/// and are ignored), so the packed buffer needs 2 floats of slack past its end.
public enum f32_gemv_packed_a {
    /// y[m·yStride] = epilogue(Σ_k A[m][k]·x[k]) for the 6-row tiles in `tiles`
    /// (the epilogue sees row m, column 0).
    @inline(__always)
    public static func run(m: Int, k: Int, packedA: UnsafePointer<Float>, x: UnsafePointer<Float>,
                           y: UnsafeMutablePointer<Float>, yStride: Int, epilogue: GemmEpilogue, tiles: Range<Int>) {
        let mr = GemmTile.mr
        for t in tiles {
            var s0 = SIMD8<Float>(), s1 = SIMD8<Float>(), s2 = SIMD8<Float>(), s3 = SIMD8<Float>()
            var k0 = 0
            while k0 < k {
                let kc = min(GemmDriver.kBlock, k &- k0)
                let a = UnsafeRawPointer(packedA + GemmPacking.aOffset(tile: t, k0: k0, kc: kc, m: m))
                let xb = x + k0
                var kk = 0
                while kk &+ 4 <= kc {
                    let p = a + kk &* mr &* 4
                    s0.addProduct(p.loadUnaligned(as: SIMD8<Float>.self), SIMD8(repeating: xb[kk]))
                    s1.addProduct(p.loadUnaligned(fromByteOffset: 24, as: SIMD8<Float>.self), SIMD8(repeating: xb[kk &+ 1]))
                    s2.addProduct(p.loadUnaligned(fromByteOffset: 48, as: SIMD8<Float>.self), SIMD8(repeating: xb[kk &+ 2]))
                    s3.addProduct(p.loadUnaligned(fromByteOffset: 72, as: SIMD8<Float>.self), SIMD8(repeating: xb[kk &+ 3]))
                    kk &+= 4
                }
                while kk < kc {
                    s0.addProduct((a + kk &* mr &* 4).loadUnaligned(as: SIMD8<Float>.self), SIMD8(repeating: xb[kk]))
                    kk &+= 1
                }
                k0 &+= kc
            }
            let sum = (s0 + s1) + (s2 + s3)
            let m0 = t &* mr
            for r in 0..<min(mr, m &- m0) {
                y[(m0 &+ r) &* yStride] = epilogue.apply(sum[r], row: m0 &+ r, col: 0)
            }
        }
    }
}

/// y = x·B for one row x (M = 1: a fully connected layer at batch 1), B in the GEMM's packed
/// 32-column panels (`GemmPacking.packB`, k-major within a panel). The 6×32 micro-kernel would
/// multiply 5 rows of padding; more to the point, with one row the product is bound by reading B
/// (1280×1000 floats is 5 MB, beyond L2), and one panel at a time is one sequential stream. Here four
/// panels are read side by side: four streams in flight and eight independent accumulator chains.
public enum f32_gemv_packed_b_4x32 {
    /// y[j] = epilogue(Σ_k x[k]·B[k][j]) (row 0, column j) for the columns of the panels in `panels`.
    public static func run(k: Int, n: Int, x: UnsafePointer<Float>, packedB: UnsafePointer<Float>,
                           y: UnsafeMutablePointer<Float>, epilogue: GemmEpilogue, panels: Range<Int>) {
        let nr = GemmTile.nr, stride = k &* nr
        var p = panels.lowerBound
        while p &+ 4 <= panels.upperBound {
            let b0 = UnsafeRawPointer(packedB + p &* stride)
            let b1 = b0 + stride &* 4, b2 = b1 + stride &* 4, b3 = b2 + stride &* 4
            var a0 = SIMD16<Float>(), a1 = SIMD16<Float>(), c0 = SIMD16<Float>(), c1 = SIMD16<Float>()
            var d0 = SIMD16<Float>(), d1 = SIMD16<Float>(), e0 = SIMD16<Float>(), e1 = SIMD16<Float>()
            for kk in 0..<k {
                let v = SIMD16<Float>(repeating: x[kk]), o = kk &* nr &* 4
                a0 = a0.addingProduct(b0.load(fromByteOffset: o, as: SIMD16<Float>.self), v)
                a1 = a1.addingProduct(b0.load(fromByteOffset: o &+ 64, as: SIMD16<Float>.self), v)
                c0 = c0.addingProduct(b1.load(fromByteOffset: o, as: SIMD16<Float>.self), v)
                c1 = c1.addingProduct(b1.load(fromByteOffset: o &+ 64, as: SIMD16<Float>.self), v)
                d0 = d0.addingProduct(b2.load(fromByteOffset: o, as: SIMD16<Float>.self), v)
                d1 = d1.addingProduct(b2.load(fromByteOffset: o &+ 64, as: SIMD16<Float>.self), v)
                e0 = e0.addingProduct(b3.load(fromByteOffset: o, as: SIMD16<Float>.self), v)
                e1 = e1.addingProduct(b3.load(fromByteOffset: o &+ 64, as: SIMD16<Float>.self), v)
            }
            store(a0, a1, panel: p, n: n, y: y, epilogue: epilogue)
            store(c0, c1, panel: p &+ 1, n: n, y: y, epilogue: epilogue)
            store(d0, d1, panel: p &+ 2, n: n, y: y, epilogue: epilogue)
            store(e0, e1, panel: p &+ 3, n: n, y: y, epilogue: epilogue)
            p &+= 4
        }
        while p < panels.upperBound {
            // One panel: k split over four accumulator pairs.
            let b = UnsafeRawPointer(packedB + p &* stride)
            var s = (SIMD16<Float>(), SIMD16<Float>(), SIMD16<Float>(), SIMD16<Float>())
            var t = (SIMD16<Float>(), SIMD16<Float>(), SIMD16<Float>(), SIMD16<Float>())
            var kk = 0
            while kk &+ 4 <= k {
                let o = kk &* nr &* 4
                s.0 = s.0.addingProduct(b.load(fromByteOffset: o, as: SIMD16<Float>.self), SIMD16(repeating: x[kk]))
                t.0 = t.0.addingProduct(b.load(fromByteOffset: o &+ 64, as: SIMD16<Float>.self), SIMD16(repeating: x[kk]))
                s.1 = s.1.addingProduct(b.load(fromByteOffset: o &+ 128, as: SIMD16<Float>.self), SIMD16(repeating: x[kk &+ 1]))
                t.1 = t.1.addingProduct(b.load(fromByteOffset: o &+ 192, as: SIMD16<Float>.self), SIMD16(repeating: x[kk &+ 1]))
                s.2 = s.2.addingProduct(b.load(fromByteOffset: o &+ 256, as: SIMD16<Float>.self), SIMD16(repeating: x[kk &+ 2]))
                t.2 = t.2.addingProduct(b.load(fromByteOffset: o &+ 320, as: SIMD16<Float>.self), SIMD16(repeating: x[kk &+ 2]))
                s.3 = s.3.addingProduct(b.load(fromByteOffset: o &+ 384, as: SIMD16<Float>.self), SIMD16(repeating: x[kk &+ 3]))
                t.3 = t.3.addingProduct(b.load(fromByteOffset: o &+ 448, as: SIMD16<Float>.self), SIMD16(repeating: x[kk &+ 3]))
                kk &+= 4
            }
            while kk < k {
                let o = kk &* nr &* 4
                s.0 = s.0.addingProduct(b.load(fromByteOffset: o, as: SIMD16<Float>.self), SIMD16(repeating: x[kk]))
                t.0 = t.0.addingProduct(b.load(fromByteOffset: o &+ 64, as: SIMD16<Float>.self), SIMD16(repeating: x[kk]))
                kk &+= 1
            }
            store((s.0 + s.1) + (s.2 + s.3), (t.0 + t.1) + (t.2 + t.3), panel: p, n: n, y: y, epilogue: epilogue)
            p &+= 1
        }
    }

    @inline(__always)
    static func store(_ lo: SIMD16<Float>, _ hi: SIMD16<Float>, panel: Int, n: Int,
                      y: UnsafeMutablePointer<Float>, epilogue: GemmEpilogue) {
        let n0 = panel &* GemmTile.nr
        let left = n &- n0
        epilogue.store(lo, row: 0, col: n0, lanes: min(16, left), to: y + n0)
        if left > 16 { epilogue.store(hi, row: 0, col: n0 &+ 16, lanes: min(16, left &- 16), to: y + (n0 &+ 16)) }
    }
}
