import Foundation
import GlimpseKernels
import GlimpseTestSupport
import XCTest

/// Vectorized activations and binary rows against scalar Foundation references.
final class ElementwiseKernelTests: XCTestCase {
    func testExpSigmoidSwish() {
        var rng = TestRandom(seed: 13)
        for n in [1, 15, 16, 17, 100, 333] {
            let x = AlignedBuffer((0..<n).map { _ in rng.float() * 30 })
            let y = AlignedBuffer(n)
            f32_unary(.swish, x.pointer, y.pointer, count: n)
            assertClose(y.array, x.array.map { $0 / (1 + Foundation.exp(-$0)) }, tolerance: 1e-6, "swish n=\(n)")
            f32_unary(.sigmoid, x.pointer, y.pointer, count: n)
            assertClose(y.array, x.array.map { 1 / (1 + Foundation.exp(-$0)) }, tolerance: 1e-6, "sigmoid n=\(n)")
        }
        for v: Float in [-80, -10, -1, -0.3, 0, 0.3, 1, 10, 80, 88.3] {
            let e = simdExp(SIMD16(repeating: v))[0]
            XCTAssertEqual(e, Foundation.exp(v), accuracy: Foundation.exp(v) * 1e-6, "exp(\(v))")
        }
        // Past the clamp the result saturates, finite and positive.
        for v: Float in [88.7, 100, 1e30, -100, -1e30] {
            let e = simdExp(SIMD16(repeating: v))[0]
            XCTAssertTrue(e.isFinite && e > 0, "exp(\(v)) = \(e)")
        }
    }

    /// The division-free reciprocal behind sigmoid, over the whole range it is used on ([1, 6e34]),
    /// mantissa patterns included, and sigmoid at the clamp limits.
    func testReciprocalWithoutDivision() {
        var rng = TestRandom(seed: 31)
        var worst: Float = 0
        for i in 0..<4000 {
            let d = i < 2 ? [Float(1), 6e34][i] : Float(Foundation.pow(10, Double(rng.float() + 1) / 2 * 34.7))
            let r = simdReciprocalPositive(SIMD16(repeating: d))[0]
            worst = max(worst, abs(r * d - 1))
        }
        XCTAssertLessThan(worst, 3e-7, "largest relative error of 1/d")
        XCTAssertEqual(simdSigmoid(SIMD16(repeating: -200))[0], 0, accuracy: 1e-30)
        XCTAssertEqual(simdSigmoid(SIMD16(repeating: 200))[0], 1, accuracy: 1e-7)
    }

    /// The swish and sigmoid kernels themselves (not through `f32_unary`): every length up to
    /// three vectors and a few beyond, so each tail size runs, from unaligned starts, with inputs
    /// out to where the exponential saturates; against a scalar reference in Double.
    func testSwishAndSigmoidKernelsWithTails() {
        var rng = TestRandom(seed: 19)
        for n in Array(0...48) + [63, 64, 65, 255, 1000] {
            let offset = n % 3
            let x = AlignedBuffer(rng.floats(n + offset).map { $0 * 40 })
            if n > 1 { x.pointer[offset] = -100; x.pointer[offset + n - 1] = 100 }
            let input = Array(x.array[offset...]).map(Double.init)
            let y = AlignedBuffer([Float](repeating: .nan, count: n))
            f32_sigmoid(x.pointer + offset, y.pointer, count: n)
            assertClose(y.array, input.map { Float(1 / (1 + Foundation.exp(-$0))) }, tolerance: 1e-6, "sigmoid n=\(n)")
            f32_swish(x.pointer + offset, y.pointer, count: n)
            assertClose(y.array, input.map { Float($0 / (1 + Foundation.exp(-$0))) }, tolerance: 1e-6, "swish n=\(n)")
        }
    }

    func testBinaryRows() {
        var rng = TestRandom(seed: 17)
        for n in [1, 16, 23, 70] {
            let a = AlignedBuffer(rng.floats(n)), b = AlignedBuffer(rng.floats(n)), o = AlignedBuffer(n)
            f32_binary_row(.mul, a.pointer, 1, b.pointer, 0, o.pointer, n, lower: -.infinity, upper: .infinity)
            assertClose(o.array, a.array.map { $0 * b.array[0] })
            f32_binary_row(.add, a.pointer, 1, b.pointer, 1, o.pointer, n, lower: 0, upper: .infinity)
            assertClose(o.array, zip(a.array, b.array).map { max(0, $0 + $1) })
        }
    }

    /// QuantizeLinear / DequantizeLinear against the scalar formula, with tails, halfway cases (which
    /// round to even) and values beyond the clamp.
    func testQuantizeAndDequantize() {
        var rng = TestRandom(seed: 43)
        for n in [1, 15, 16, 37, 100] {
            let scale: Float = 0.0375
            var values = rng.floats(n).map { $0 * 8 }
            for i in stride(from: 0, to: n, by: 5) { values[i] = (Float(i % 7) - 3.5) * scale }   // exact halves
            if n > 3 { values[3] = 50; values[n - 1] = -50 }
            let x = AlignedBuffer(values), y = AlignedBuffer(n)
            quantize_f32(x.pointer, y.pointer, count: n, scale: scale, lower: -128, upper: 127)
            XCTAssertEqual(y.array, values.map { min(max(($0 / scale).rounded(.toNearestOrEven), -128), 127) }, "n=\(n)")
            if n > 3 { XCTAssertEqual(y.array[3], 127); XCTAssertEqual(y.array[n - 1], -128) }
            XCTAssertEqual(y.array[0], -4, "−3.5 rounds to the even −4")
            scale_f32(y.pointer, x.pointer, count: n, scale: scale)
            XCTAssertEqual(x.array, y.array.map { $0 * scale }, "n=\(n)")
        }
    }

    func testQLinearAdd() {
        var rng = TestRandom(seed: 47)
        for n in [1, 16, 29, 200] {
            let a = rng.floats(n).map { ($0 * 128).rounded() }, b = rng.floats(n).map { ($0 * 128).rounded() }
            let x = AlignedBuffer(a), z = AlignedBuffer(b), y = AlignedBuffer(n)
            let ra: Float = 0.7318, rb: Float = 1.213
            qlinear_add_f32(x.pointer, ra, z.pointer, rb, y.pointer, count: n, lower: -100, upper: 120)
            let want = (0..<n).map { min(max((a[$0] * ra).addingProduct(b[$0], rb).rounded(.toNearestOrEven), -100), 120) }
            XCTAssertEqual(y.array, want, "n=\(n)")
            XCTAssertTrue(y.array.contains(120) || n < 100, "the clamp is reached")
        }
    }
}
