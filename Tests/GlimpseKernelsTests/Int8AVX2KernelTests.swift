import GlimpseKernels
import GlimpseTestSupport
import XCTest

/// The AVX2 int8 GEMM (`vpmaddwd` on int16-widened operands, the wide layouts), called directly so
/// that VNNI builds test it too, against the scalar reference bit for bit.
final class Int8AVX2KernelTests: XCTestCase {
    typealias Bytes = Int8KernelTests.Bytes

    /// Packs a u8 matrix `x[k][n]` (n ≤ 32) into one B panel `[K/4][32][4]`, zeros past k and n.
    func panel(_ x: [UInt8], k: Int, n: Int) -> Bytes {
        let p = Bytes(QS8Gemm.panelCount(k: k, wide: true))
        for g in 0..<QS8Gemm.kGroups(k) {
            for j in 0..<n {
                for i in 0..<4 where 4 * g + i < k { p.u8[(g * 32 + j) * 4 + i] = x[(4 * g + i) * n + j] }
            }
        }
        return p
    }

    /// Runs one 8×32 tile (rows ≤ 8, n ≤ 32) through the AVX2 kernel and the scalar reference.
    func check(w: [Int8], x: [UInt8], rows: Int, k: Int, n: Int, requant r: Requantization, _ message: String,
               file: StaticString = #filePath, line: UInt = #line) -> [Int32] {
#if GLIMPSE_AVX2
        let a = Bytes(QS8Gemm.packedACount(m: rows, k: k, wide: true))
        w.withUnsafeBufferPointer { QS8Gemm.packA($0.baseAddress!, m: rows, k: k, into: a.s8, wide: true) }
        let b = panel(x, k: k, n: n)
        QS8Gemm.widenPanel(b.u8, groups: QS8Gemm.kGroups(k))
        let storage = RequantStorage(r)
        let ldc = n + 3
        let out = Bytes(rows * ldc)
        qs8_gemm_8x32_avx2(a: a.s8, panel: b.u8, groups: QS8Gemm.kGroups(k), rows: rows, row0: 0, n: n, c: out.u8, ldc: ldc,
                           requant: storage.pointers)
        var sums: [Int32] = []
        for row in 0..<rows {
            for j in 0..<n {
                var acc: Int32 = 0
                for i in 0..<k { acc &+= Int32(w[row * k + i]) * Int32(x[i * n + j]) }
                sums.append(acc)
                XCTAssertEqual(out.u8[row * ldc + j], r.requantize(acc, channel: row), "\(message): row \(row), column \(j)",
                               file: file, line: line)
            }
            // Nothing written past the n columns of the row.
            for j in n..<ldc { XCTAssertEqual(out.u8[row * ldc + j], 0, "\(message): row \(row) beyond n", file: file, line: line) }
        }
        return sums
#else
        return []
#endif
    }

    /// Skips the test where this build has no AVX2 kernel.
    func skipUnlessAVX2() throws {
#if !GLIMPSE_AVX2
        throw XCTSkip("this build does not target AVX2")
#endif
    }

    func testAVX2GemmMatchesReference() throws {
        try skipUnlessAVX2()
        var rng = TestRandom(seed: 23)
        for trial in 0..<60 {
            let rows = rng.int(1...8), k = rng.int(1...150), n = rng.int(1...32)
            let w = (0..<rows * k).map { _ in Int8(truncatingIfNeeded: rng.next()) }
            let x = (0..<k * n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let base = 1 / (Float(k).squareRoot() * 300)
            let scales = trial % 2 == 0 ? (0..<rows).map { _ in base * (0.25 + abs(rng.float()) * 2) } : [Float](repeating: base, count: rows)
            let bias = (0..<rows).map { _ in Int32(rng.int(-20000...20000)) }
            let zy = trial % 3 == 0 ? Int32(0) : Int32(rng.int(0...255))
            _ = check(w: w, x: x, rows: rows, k: k, n: n, requant: Requantization(bias: bias, scale: scales, zeroPoint: zy),
                      "trial \(trial): rows \(rows), k \(k), n \(n)")
        }
    }

    /// Weights and inputs at the ends of their ranges, where plain `vpmaddubsw` saturates its pair
    /// sums (255·(−128) twice is −65280): the int16 form must still equal the exact sums.
    func testAVX2GemmExactWhereMaddubsSaturates() throws {
        try skipUnlessAVX2()
        var rng = TestRandom(seed: 29)
        let rows = 8, k = 37, n = 29
        let w = (0..<rows * k).map { i in i % 3 == 2 ? Int8(127) : Int8(-128) }
        let x = (0..<k * n).map { _ in UInt8(rng.int(240...255)) }
        let span = Float(k) * 255 * 128
        let r = Requantization(bias: [Int32](repeating: 0, count: rows), scale: [Float](repeating: 100 / span, count: rows),
                               zeroPoint: 128)
        let sums = check(w: w, x: x, rows: rows, k: k, n: n, requant: r, "extremes")
        // The same sums with int16-saturated pair sums, as plain vpmaddubsw would give: they differ,
        // so this case really is the one exactness is about.
        var saturatedDiffers = false
        for row in 0..<rows {
            for j in 0..<n {
                var acc: Int32 = 0
                var i = 0
                while i < k {
                    var pair = Int32(w[row * k + i]) * Int32(x[i * n + j])
                    if i + 1 < k { pair += Int32(w[row * k + i + 1]) * Int32(x[(i + 1) * n + j]) }
                    acc += min(max(pair, Int32(Int16.min)), Int32(Int16.max))
                    i += 2
                }
                if acc != sums[row * n + j] { saturatedDiffers = true }
            }
        }
        XCTAssertTrue(saturatedDiffers, "the extreme operands should saturate plain vpmaddubsw")
    }
}
