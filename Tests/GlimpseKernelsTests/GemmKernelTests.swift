import GlimpseKernels
import GlimpseTestSupport
import XCTest

/// The GEMM micro-kernels of every variant this CPU runs (`f32_gemm_6x32_avx512`, `f32_gemm_6x16_avx2`)
/// through GemmDriver against the scalar reference, sweeping shapes with row/column/K tails and every
/// epilogue feature.
final class GemmKernelTests: XCTestCase {
    /// `unpackA` inverts `packA`, across row tails and K blocks.
    func testUnpackAInvertsPackA() {
        var rng = TestRandom(seed: 77)
        for (m, k) in [(1, 1), (6, 9), (13, 256), (50, 300), (64, 576)] {
            let a = AlignedBuffer(rng.floats(m * k))
            let packed = AlignedBuffer(GemmPacking.packedACount(m: m, k: k)), back = AlignedBuffer(m * k)
            GemmPacking.packA(a.pointer, m: m, k: k, rowStride: k, colStride: 1, into: packed.pointer)
            GemmPacking.unpackA(packed.pointer, m: m, k: k, into: back.pointer)
            XCTAssertEqual(back.array, a.array, "m=\(m) k=\(k)")
        }
    }

    func run(m: Int, n: Int, k: Int, epilogue makeEpilogue: (AlignedBuffer, AlignedBuffer, AlignedBuffer) -> GemmEpilogue,
             seed: UInt64, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(KernelDispatch.available.isEmpty)
        for isa in KernelDispatch.available {
            KernelDispatch.withISA(isa) {
                runOne(m: m, n: n, k: k, epilogue: makeEpilogue, seed: seed, label: "\(isa)", file: file, line: line)
            }
        }
    }

    func runOne(m: Int, n: Int, k: Int, epilogue makeEpilogue: (AlignedBuffer, AlignedBuffer, AlignedBuffer) -> GemmEpilogue,
                seed: UInt64, label: String, file: StaticString, line: UInt) {
        var rng = TestRandom(seed: seed)
        let a = AlignedBuffer(rng.floats(m * k)), b = AlignedBuffer(rng.floats(k * n))
        let rowBias = AlignedBuffer(rng.floats(m + 16)), colBias = AlignedBuffer(rng.floats(n + 16))
        let residual = AlignedBuffer(rng.floats(m * n + 16))
        let ep = makeEpilogue(rowBias, colBias, residual)
        let packedA = AlignedBuffer(GemmPacking.packedACount(m: m, k: k))
        GemmPacking.packA(a.pointer, m: m, k: k, rowStride: k, colStride: 1, into: packedA.pointer)
        let scratch = AlignedBuffer(GemmDriver.scratchCount(k: k))
        // Outputs start as NaN: an element the driver skips fails the comparison.
        let c = AlignedBuffer([Float](repeating: .nan, count: m * n)), ref = AlignedBuffer(m * n)
        GemmDriver.run(m: m, n: n, k: k, packedA: packedA.pointer, b: RowMajorB(base: b.pointer, rowStride: n),
                       c: c.pointer, ldc: n, epilogue: ep, panels: 0..<GemmDriver.panelCount(n: n), scratch: scratch.pointer)
        f32_gemm_reference(m: m, n: n, k: k, a: a.pointer, lda: k, b: b.pointer, ldb: n, c: ref.pointer, ldc: n, epilogue: ep)
        assertClose(c.array, ref.array, tolerance: 1e-5, "\(label) m=\(m) n=\(n) k=\(k)", file: file, line: line)

        // Same with B pre-packed (the weights path of Gemm/MatMul).
        let packedB = AlignedBuffer(GemmPacking.packedBCount(n: n, k: k))
        GemmPacking.packB(b.pointer, k: k, n: n, rowStride: n, colStride: 1, into: packedB.pointer)
        let c2 = AlignedBuffer([Float](repeating: .nan, count: m * n))
        GemmDriver.run(m: m, n: n, k: k, packedA: packedA.pointer, b: PackedB(base: packedB.pointer, k: k),
                       c: c2.pointer, ldc: n, epilogue: ep, panels: 0..<GemmDriver.panelCount(n: n), scratch: scratch.pointer)
        assertClose(c2.array, ref.array, tolerance: 1e-5, "\(label) packed B m=\(m) n=\(n) k=\(k)", file: file, line: line)
    }

    func testShapesWithTails() {
        var rng = TestRandom(seed: 7)
        let fixed = [(6, 32, 1), (1, 1, 1), (7, 33, 5), (12, 64, 300), (5, 31, 257), (64, 49, 512), (13, 100, 27)]
        for (i, s) in fixed.enumerated() {
            run(m: s.0, n: s.1, k: s.2, epilogue: { _, _, _ in .none }, seed: UInt64(i))
        }
        for i in 0..<25 {
            run(m: rng.int(1...40), n: rng.int(1...130), k: rng.int(1...600), epilogue: { _, _, _ in .none }, seed: UInt64(100 + i))
        }
    }

    func testEpilogues() {
        var rng = TestRandom(seed: 11)
        for i in 0..<12 {
            let m = rng.int(1...20), n = rng.int(1...80), k = rng.int(1...300)
            run(m: m, n: n, k: k, epilogue: { rb, _, res in
                GemmEpilogue(rowBias: rb.pointer, residual: res.pointer, residualStride: n, lowerBound: 0, upperBound: 6)
            }, seed: UInt64(200 + i))
            run(m: m, n: n, k: k, epilogue: { _, cb, _ in
                GemmEpilogue(colBias: cb.pointer, lowerBound: -0.5)
            }, seed: UInt64(300 + i))
        }
        // Whole 6×32 tiles are finished in registers: every feature that path applies, with K in one
        // block and across blocks (the later blocks accumulate into C).
        for (i, k) in [7, 256, 300].enumerated() {
            run(m: 12, n: 64, k: k, epilogue: { rb, _, res in
                GemmEpilogue(rowBias: rb.pointer, residual: res.pointer, residualStride: 64, lowerBound: -2, upperBound: 3, swish: true)
            }, seed: UInt64(400 + i))
            run(m: 18, n: 96, k: k, epilogue: { rb, _, _ in GemmEpilogue(rowBias: rb.pointer, lowerBound: 0) }, seed: UInt64(410 + i))
            // Requantization (QLinearConv): per-row scale, rounding half to even, then the clamp.
            run(m: 12, n: 64, k: k, epilogue: { rb, cb, res in
                GemmEpilogue(rowBias: rb.pointer, rowScale: cb.pointer, roundToInteger: true, residual: res.pointer,
                             residualStride: 64, lowerBound: -3, upperBound: 2)
            }, seed: UInt64(420 + i))
        }
    }

    /// The one-column path (1×1 convolutions of 1×1 planes) over packed A, with K and row tails,
    /// split tile ranges and the fused epilogue (bias, residual, clamp, swish).
    func testGemvOverPackedAMatchesReference() {
        var rng = TestRandom(seed: 29)
        for i in 0..<30 {
            let m = i < 3 ? [1, 6, 1152][i] : rng.int(1...70), k = i < 3 ? [1, 3, 48][i] : rng.int(1...400)
            let a = AlignedBuffer(rng.floats(m * k)), x = AlignedBuffer(rng.floats(k))
            let rowBias = AlignedBuffer(rng.floats(m)), residual = AlignedBuffer(rng.floats(m))
            let ep = GemmEpilogue(rowBias: rowBias.pointer, residual: i % 2 == 0 ? residual.pointer : nil, residualStride: 1,
                                  lowerBound: -1, upperBound: 4, swish: i % 3 == 0)
            let packedA = AlignedBuffer(GemmPacking.packedACount(m: m, k: k) + 16)
            GemmPacking.packA(a.pointer, m: m, k: k, rowStride: k, colStride: 1, into: packedA.pointer)
            let y = AlignedBuffer(m), ref = AlignedBuffer(m)
            let tiles = (m + GemmTile.mr - 1) / GemmTile.mr, split = rng.int(0...tiles)
            f32_gemv_packed_a.run(m: m, k: k, packedA: packedA.pointer, x: x.pointer, y: y.pointer, yStride: 1, epilogue: ep, tiles: 0..<split)
            f32_gemv_packed_a.run(m: m, k: k, packedA: packedA.pointer, x: x.pointer, y: y.pointer, yStride: 1, epilogue: ep, tiles: split..<tiles)
            f32_gemm_reference(m: m, n: 1, k: k, a: a.pointer, lda: k, b: x.pointer, ldb: 1, c: ref.pointer, ldc: 1, epilogue: ep)
            assertClose(y.array, ref.array, tolerance: 1e-5, "m=\(m) k=\(k)")
        }
    }

    /// One row times packed B (fully connected layers at batch 1): four panels side by side and the
    /// single-panel remainder, column tails, K with and without a multiple of 4, the panels cut in
    /// two ranges as two threads would, with a column bias, column scale and clamp.
    func testRowTimesPackedBMatchesReference() {
        var rng = TestRandom(seed: 41)
        for i in 0..<24 {
            let n = rng.int(1...300), k = i % 3 == 0 ? rng.int(1...7) : rng.int(8...700)
            let x = AlignedBuffer(rng.floats(k)), b = AlignedBuffer(rng.floats(k * n))
            let colBias = AlignedBuffer(rng.floats(n) + [Float](repeating: 0, count: 16))
            let colScale = AlignedBuffer(rng.floats(n).map { 0.5 + abs($0) } + [Float](repeating: 0, count: 16))
            let ep = GemmEpilogue(colBias: colBias.pointer, colScale: colScale.pointer, lowerBound: -0.4, upperBound: 3)
            let packedB = AlignedBuffer(GemmPacking.packedBCount(n: n, k: k))
            GemmPacking.packB(b.pointer, k: k, n: n, rowStride: n, colStride: 1, into: packedB.pointer)
            let y = AlignedBuffer(n + 32), ref = AlignedBuffer(n)
            for j in n..<(n + 32) { y.pointer[j] = 99 }
            let panels = GemmDriver.panelCount(n: n), cut = rng.int(0...panels)
            for range in [0..<cut, cut..<panels] {
                f32_gemv_packed_b_4x32.run(k: k, n: n, x: x.pointer, packedB: packedB.pointer, y: y.pointer, epilogue: ep, panels: range)
            }
            f32_gemm_reference(m: 1, n: n, k: k, a: x.pointer, lda: k, b: b.pointer, ldb: n, c: ref.pointer, ldc: n, epilogue: ep)
            assertClose(Array(y.array[0..<n]), ref.array, tolerance: 1e-5, "n=\(n) k=\(k)")
            XCTAssertTrue(y.array[n...].allSatisfy { $0 == 99 }, "nothing written past column \(n) (n=\(n) k=\(k))")
        }
    }

    /// Batch folded into N (1×1 convolutions): tiles that straddle two images store each part in
    /// its own image, with that image's residual, for K within one block and across blocks.
    func testFoldedBatchMatchesPerImageReference() {
        var rng = TestRandom(seed: 37)
        for i in 0..<16 {
            let m = rng.int(1...20), hw = rng.int(32...100), k = i % 4 == 0 ? rng.int(257...600) : rng.int(1...80)
            runFolded(m: m, hw: hw, k: k, batch: rng.int(2...4), rng: &rng)
        }
    }

    /// Blocks of column panels (`GemmDriver.panelsPerBlock`, taken from `blockMinTiles` row tiles on):
    /// several blocks with a short last one and a column tail, a K past one K block (whose second
    /// block packs more panels at once than the first), every epilogue of a 1×1 convolution, and a
    /// folded batch whose blocks hold panels of two images and start where a thread's range does.
    func testPanelBlocksMatchReference() {
        var rng = TestRandom(seed: 53)
        let minRows = GemmTile.mr * (GemmDriver.blockMinTiles - 1) + 1
        for i in 0..<10 {
            let m = rng.int(minRows...110), k = i % 3 == 0 ? rng.int(257...300) : rng.int(1...40)
            // Columns per block of the K block that packs most panels (past 256, the second one).
            let lastBlock = k > GemmDriver.kBlock ? k - GemmDriver.kBlock : k
            let blockColumns = GemmDriver.panelsPerBlock(kc: lastBlock) * GemmTile.nr
            XCTAssertGreaterThan(blockColumns, GemmTile.nr, "k=\(k) packs one panel at a time")
            let n = rng.int(blockColumns + 1 ... 2 * blockColumns + 40)
            run(m: m, n: n, k: k, epilogue: { rb, _, res in
                GemmEpilogue(rowBias: rb.pointer, residual: res.pointer, residualStride: n, lowerBound: -1, upperBound: 2,
                             swish: i % 2 == 0)
            }, seed: UInt64(500 + i))
        }
        for _ in 0..<6 {
            runFolded(m: rng.int(minRows...80), hw: rng.int(32...150), k: rng.int(1...24), batch: rng.int(3...6), rng: &rng)
        }
    }

    /// A 1×1 convolution of `batch` images folded into one GEMM over batch·hw columns, run as two
    /// ranges of panels cut at a random panel, against the reference image by image.
    func runFolded(m: Int, hw: Int, k: Int, batch: Int, rng: inout TestRandom, file: StaticString = #filePath, line: UInt = #line) {
        let a = AlignedBuffer(rng.floats(m * k)), x = AlignedBuffer(rng.floats(batch * k * hw))
        let rowBias = AlignedBuffer(rng.floats(m)), residual = AlignedBuffer(rng.floats(batch * m * hw))
        let ep = GemmEpilogue(rowBias: rowBias.pointer, residual: residual.pointer, residualStride: hw, lowerBound: -0.7)
        let packedA = AlignedBuffer(GemmPacking.packedACount(m: m, k: k))
        GemmPacking.packA(a.pointer, m: m, k: k, rowStride: k, colStride: 1, into: packedA.pointer)
        let c = AlignedBuffer([Float](repeating: .nan, count: batch * m * hw)), ref = AlignedBuffer(batch * m * hw)
        let scratch = AlignedBuffer(GemmDriver.scratchCount(k: k))
        let panels = GemmDriver.panelCount(n: batch * hw), cut = rng.int(0...panels)
        for range in [0..<cut, cut..<panels] {
            GemmDriver.run(m: m, n: batch * hw, k: k, packedA: packedA.pointer,
                           b: FoldedRowMajorB(base: x.pointer, imageColumns: hw, imageStride: k * hw),
                           c: c.pointer, ldc: hw, epilogue: ep, panels: range, scratch: scratch.pointer,
                           imageColumns: hw, imageStride: m * hw)
        }
        for b in 0..<batch {
            f32_gemm_reference(m: m, n: hw, k: k, a: a.pointer, lda: k, b: x.pointer + b * k * hw, ldb: hw,
                               c: ref.pointer + b * m * hw, ldc: hw, epilogue: ep.shiftingResidual(by: b * m * hw))
        }
        assertClose(c.array, ref.array, tolerance: 1e-5, "m=\(m) hw=\(hw) k=\(k) batch=\(batch)", file: file, line: line)
    }

    /// `Gemm49Driver` (GEMMs of exactly 49 columns, B read in place) against the reference: row
    /// tails, K within one block and past it (later blocks accumulate into C), B and C with rows
    /// wider than 49 (nothing past column 48 is written), every kind of epilogue, and the row tiles
    /// run as two ranges cut at a random tile.
    func testFortyNineColumnsMatchReference() {
        var rng = TestRandom(seed: 61)
        let n = Gemm49Driver.columns
        for i in 0..<20 {
            let m = rng.int(1...40), k = i % 4 == 0 ? rng.int(257...600) : rng.int(1...80)
            let ldb = i % 3 == 0 ? 65 : n, ldc = i % 5 == 0 ? 56 : n
            let a = AlignedBuffer(rng.floats(m * k)), b = AlignedBuffer(rng.floats(k * ldb))
            let rowBias = AlignedBuffer(rng.floats(m)), colBias = AlignedBuffer(rng.floats(n))
            let rowScale = AlignedBuffer((0..<m).map { _ in 4 + rng.float() })
            let residual = AlignedBuffer(rng.floats(m * ldc))
            let ep: GemmEpilogue
            switch i % 4 {
            case 0: ep = GemmEpilogue(rowBias: rowBias.pointer, residual: residual.pointer, residualStride: ldc,
                                      lowerBound: -1, upperBound: 2, swish: true)
            case 1: ep = GemmEpilogue(colBias: colBias.pointer, lowerBound: -0.5)
            case 2: ep = GemmEpilogue(rowBias: rowBias.pointer, rowScale: rowScale.pointer, roundToInteger: true,
                                      residual: residual.pointer, residualStride: ldc, lowerBound: -3, upperBound: 2)
            default: ep = .none
            }
            let packedA = AlignedBuffer(GemmPacking.packedACount(m: m, k: k))
            GemmPacking.packA(a.pointer, m: m, k: k, rowStride: k, colStride: 1, into: packedA.pointer)
            let c = AlignedBuffer([Float](repeating: .nan, count: m * ldc)), ref = AlignedBuffer(m * n)
            let tiles = (m + GemmTile.mr - 1) / GemmTile.mr, cut = rng.int(0...tiles)
            f32_gemm_reference(m: m, n: n, k: k, a: a.pointer, lda: k, b: b.pointer, ldb: ldb, c: ref.pointer, ldc: n, epilogue: ep)
            for isa in KernelDispatch.available {
                c.pointer.update(repeating: .nan, count: m * ldc)
                KernelDispatch.withISA(isa) {
                    for range in [0..<cut, cut..<tiles] {
                        Gemm49Driver.run(m: m, k: k, packedA: packedA.pointer, b: b.pointer, ldb: ldb, c: c.pointer, ldc: ldc,
                                         epilogue: ep, rowTiles: range)
                    }
                }
                let out = c.array
                let columns = (0..<m).flatMap { r in out[(r * ldc)..<(r * ldc + n)] }
                assertClose(columns, ref.array, tolerance: 1e-5, "\(isa) m=\(m) k=\(k) ldb=\(ldb) ldc=\(ldc)")
                let padding = (0..<m).flatMap { r in out[(r * ldc + n)..<(r * ldc + ldc)] }
                XCTAssertTrue(padding.allSatisfy(\.isNaN), "\(isa) m=\(m) k=\(k) ldc=\(ldc): written past column 48")
            }
        }
    }

    func testRequantizingEpilogueRoundsHalfToEven() {
        let rb = AlignedBuffer([0.5, 1.5, 2.5, -0.5, 0, 0] + [Float](repeating: 0, count: 16))
        let ep = GemmEpilogue(rowBias: rb.pointer, roundToInteger: true)
        XCTAssertEqual(ep.apply(0, row: 0, col: 0), 0)
        XCTAssertEqual(ep.apply(0, row: 1, col: 0), 2)
        XCTAssertEqual(ep.apply(0, row: 2, col: 0), 2)
        XCTAssertEqual(ep.apply(0, row: 3, col: 0), 0)
        let v = ep.apply(SIMD16<Float>(repeating: 0), row: 2, col: 0)
        XCTAssertEqual(v[5], 2)
    }
}
