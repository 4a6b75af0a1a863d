// The clock and the single-core peaks the runner divides by (see main.swift).
import Foundation
import GlimpseKernels

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// Single-core fp32 peak measured here and now with the registers of the kernels in use: 16
/// independent zmm FMA chains for the AVX-512 variants, 12 ymm chains otherwise (enough to fill two
/// FMA ports with 4- or 5-cycle latency, within AVX2's 16 registers), for about 0.3 s. The "% of peak"
/// column divides by this times the thread count, so it follows the machine the benchmark runs on.
/// (Sixteen zmm chains on an AVX2 machine are 32 ymm ones and spill: they read a third of its peak.)
/// The best rate of three timed runs of `run`, which does `operations` operations, in G per second.
func bestOfThree(operations: Double, _ run: () -> Void) -> Double {
    var best = 0.0
    for _ in 0..<3 {
        let t0 = now()
        run()
        best = max(best, operations / (now() - t0) / 1e9)
    }
    return best
}

func measurePeakPerCore() -> Double {
    KernelDispatch.usesAVX512 ? measurePeakZMM() : measurePeakYMM()
}

func measurePeakYMM() -> Double {
    var acc = (0..<12).map { SIMD8<Float>(repeating: Float($0) * 1e-3) }
    let m = SIMD8<Float>(repeating: 0.999_999), a = SIMD8<Float>(repeating: 1e-7)
    let steps = 4_000_000
    let best = bestOfThree(operations: Double(steps) * 12 * 8 * 2) {
        acc.withUnsafeMutableBufferPointer { v in
            var x0 = v[0], x1 = v[1], x2 = v[2], x3 = v[3], x4 = v[4], x5 = v[5], x6 = v[6], x7 = v[7]
            var x8 = v[8], x9 = v[9], x10 = v[10], x11 = v[11]
            for _ in 0..<steps {
                x0 = a.addingProduct(x0, m); x1 = a.addingProduct(x1, m); x2 = a.addingProduct(x2, m); x3 = a.addingProduct(x3, m)
                x4 = a.addingProduct(x4, m); x5 = a.addingProduct(x5, m); x6 = a.addingProduct(x6, m); x7 = a.addingProduct(x7, m)
                x8 = a.addingProduct(x8, m); x9 = a.addingProduct(x9, m); x10 = a.addingProduct(x10, m); x11 = a.addingProduct(x11, m)
            }
            v[0] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11
        }
    }
    if acc[0].sum() == .infinity { print("") }  // keeps the loop's result alive
    return best
}

func measurePeakZMM() -> Double {
    var acc = (0..<16).map { SIMD16<Float>(repeating: Float($0) * 1e-3) }
    let m = SIMD16<Float>(repeating: 0.999_999), a = SIMD16<Float>(repeating: 1e-7)
    let steps = 2_000_000
    let best = bestOfThree(operations: Double(steps) * 16 * 16 * 2) {
        acc.withUnsafeMutableBufferPointer { v in
            var x0 = v[0], x1 = v[1], x2 = v[2], x3 = v[3], x4 = v[4], x5 = v[5], x6 = v[6], x7 = v[7]
            var x8 = v[8], x9 = v[9], x10 = v[10], x11 = v[11], x12 = v[12], x13 = v[13], x14 = v[14], x15 = v[15]
            for _ in 0..<steps {
                x0 = a.addingProduct(x0, m); x1 = a.addingProduct(x1, m); x2 = a.addingProduct(x2, m); x3 = a.addingProduct(x3, m)
                x4 = a.addingProduct(x4, m); x5 = a.addingProduct(x5, m); x6 = a.addingProduct(x6, m); x7 = a.addingProduct(x7, m)
                x8 = a.addingProduct(x8, m); x9 = a.addingProduct(x9, m); x10 = a.addingProduct(x10, m); x11 = a.addingProduct(x11, m)
                x12 = a.addingProduct(x12, m); x13 = a.addingProduct(x13, m); x14 = a.addingProduct(x14, m); x15 = a.addingProduct(x15, m)
            }
            v[0] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11 + x12 + x13 + x14 + x15
        }
    }
    if acc[0].sum() == .infinity { print("") }  // keeps the loop's result alive
    return best
}

/// Single-core int8 peak measured here and now: 16 independent `vpdpbusd` chains (u8 × s8 → s32,
/// 64 multiply-adds each, counted as 128 operations) for about 0.3 s. Models whose quantized nodes
/// run the int8 kernels report "% of peak" against this one ("peak": "int8" in their JSON line).
func measureInt8PeakPerCore() -> Double {
    var acc = [SIMD16<Int32>](repeating: SIMD16<Int32>(), count: 16)
    let u = SIMD16<Int32>(repeating: 0x0102_0304), s = SIMD16<Int32>(repeating: 0x0101_0101)
    let steps = 1_000_000
    let best = bestOfThree(operations: Double(steps) * 16 * 64 * 2) {
        acc.withUnsafeMutableBufferPointer { v in
            var x0 = v[0], x1 = v[1], x2 = v[2], x3 = v[3], x4 = v[4], x5 = v[5], x6 = v[6], x7 = v[7]
            var x8 = v[8], x9 = v[9], x10 = v[10], x11 = v[11], x12 = v[12], x13 = v[13], x14 = v[14], x15 = v[15]
            for _ in 0..<steps {
                x0 = dpbusd(x0, u, s); x1 = dpbusd(x1, u, s); x2 = dpbusd(x2, u, s); x3 = dpbusd(x3, u, s)
                x4 = dpbusd(x4, u, s); x5 = dpbusd(x5, u, s); x6 = dpbusd(x6, u, s); x7 = dpbusd(x7, u, s)
                x8 = dpbusd(x8, u, s); x9 = dpbusd(x9, u, s); x10 = dpbusd(x10, u, s); x11 = dpbusd(x11, u, s)
                x12 = dpbusd(x12, u, s); x13 = dpbusd(x13, u, s); x14 = dpbusd(x14, u, s); x15 = dpbusd(x15, u, s)
            }
            v[0] = x0 &+ x1 &+ x2 &+ x3 &+ x4 &+ x5 &+ x6 &+ x7 &+ x8 &+ x9 &+ x10 &+ x11 &+ x12 &+ x13 &+ x14 &+ x15
        }
    }
    if acc[0].wrappedSum() == 42 { print("") }  // keeps the loop's result alive
    return best
}

/// Single-core int8 peak of the AVX2 kernels: 12 independent chains of `vpmaddwd` + `vpaddd` (16
/// multiply-adds each, counted as 32 operations), as `qs8_gemm_8x32_avx2` multiplies.
func measureInt8PeakAVX2() -> Double {
    var acc = (0..<12).map { SIMD8<Int32>(repeating: Int32($0)) }
    let s = SIMD16<Int16>(repeating: -2)
    // Each product reads its own chain's sum, so nothing in the loop is invariant.
    @inline(__always) func w(_ x: SIMD8<Int32>) -> SIMD16<Int16> { unsafeBitCast(x, to: SIMD16<Int16>.self) }
    let steps = 2_000_000
    let best = bestOfThree(operations: Double(steps) * 12 * 16 * 2) {
        acc.withUnsafeMutableBufferPointer { v in
            var x0 = v[0], x1 = v[1], x2 = v[2], x3 = v[3], x4 = v[4], x5 = v[5], x6 = v[6], x7 = v[7]
            var x8 = v[8], x9 = v[9], x10 = v[10], x11 = v[11]
            for _ in 0..<steps {
                x0 = madd16(x0, w(x0), s); x1 = madd16(x1, w(x1), s); x2 = madd16(x2, w(x2), s); x3 = madd16(x3, w(x3), s)
                x4 = madd16(x4, w(x4), s); x5 = madd16(x5, w(x5), s); x6 = madd16(x6, w(x6), s); x7 = madd16(x7, w(x7), s)
                x8 = madd16(x8, w(x8), s); x9 = madd16(x9, w(x9), s); x10 = madd16(x10, w(x10), s); x11 = madd16(x11, w(x11), s)
            }
            v[0] = x0 &+ x1 &+ x2 &+ x3 &+ x4 &+ x5 &+ x6 &+ x7 &+ x8 &+ x9 &+ x10 &+ x11
        }
    }
    if acc[0].wrappedSum() == 42 { print("") }  // keeps the loop's result alive
    return best
}
