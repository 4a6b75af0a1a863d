import GlimpseKernels
import GlimpseTestSupport
import XCTest

/// `f32_reduce_sum` and `f32_reduce_max` against scalar loops, over lengths around the vector
/// blocks (16 floats for max, 32 for sum) and from unaligned starts.
final class ReduceKernelTests: XCTestCase {
    private let lengths = [0, 1, 7, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 257, 1000]

    func testSumMatchesScalar() {
        var rng = TestRandom(seed: 41)
        for n in lengths {
            for offset in [0, 1, 5] {
                let x = AlignedBuffer(rng.floats(n + offset).map { $0 * 100 })
                let values = Array(x.array[offset...])
                let expected = values.reduce(0.0) { $0 + Double($1) }
                let got = f32_reduce_sum(x.pointer + offset, count: n)
                // Relative to the sum of magnitudes: the vector order reassociates.
                let scale = max(1, values.reduce(0.0) { $0 + Double(abs($1)) })
                XCTAssertLessThanOrEqual(abs(Double(got) - expected) / scale, 1e-5, "n=\(n) offset=\(offset)")
            }
        }
    }

    func testMaxMatchesScalar() {
        var rng = TestRandom(seed: 43)
        for n in lengths {
            for offset in [0, 3] {
                let x = AlignedBuffer(rng.floats(n + offset).map { $0 * 50 - 10 })
                let values = Array(x.array[offset...])
                // Exact: a maximum does not round.
                XCTAssertEqual(f32_reduce_max(x.pointer + offset, count: n), values.max() ?? -.infinity, "n=\(n) offset=\(offset)")
            }
        }
        // The largest value in the tail, past every full vector.
        let x = AlignedBuffer((0..<37).map { Float($0 == 36 ? 9 : -1) })
        XCTAssertEqual(f32_reduce_max(x.pointer, count: 37), 9)
    }
}
