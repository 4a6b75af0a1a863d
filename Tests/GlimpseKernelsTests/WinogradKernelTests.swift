import GlimpseKernels
import GlimpseTestSupport
import XCTest

/// `f32_winograd_2x2_3x3` at kernel level: weight transform and packing, padding, input transform,
/// the 16 GEMMs and the output transform with bias and bounds, composed as the engine composes them,
/// against the scalar convolution. Plane widths sweep the tails of the 16-tile vector blocks, output
/// channels the tails of the GEMM's 6-row tiles, and tile rows run whole or in bands.
final class WinogradKernelTests: XCTestCase {
    private struct Case {
        let cin, cout, height, width: Int
        var bandRows: Int? = nil
        var lower: Float = -.infinity, upper: Float = .infinity
    }

    private func run(_ c: Case, seed: UInt64, file: StaticString = #filePath, line: UInt = #line) {
        var rng = TestRandom(seed: seed)
        let g = ConvGeometry(inChannels: c.cin, inHeight: c.height, inWidth: c.width, kernelHeight: 3, kernelWidth: 3,
                             strideH: 1, strideW: 1, dilationH: 1, dilationW: 1, padTop: 1, padLeft: 1,
                             outHeight: c.height, outWidth: c.width)
        let x = AlignedBuffer(rng.floats(c.cin * g.inPixels))
        let w = AlignedBuffer(rng.floats(c.cout * c.cin * 9))
        let bias = AlignedBuffer(rng.floats(c.cout))
        let expected = AlignedBuffer(c.cout * g.outPixels)
        f32_conv2d_reference(input: x.pointer, weights: w.pointer, bias: bias.pointer, output: expected.pointer,
                             geometry: g, groups: 1, outChannelsPerGroup: c.cout, lowerBound: c.lower, upperBound: c.upper)

        let positions = f32_winograd_2x2_3x3.positions
        let packed = AlignedBuffer(f32_winograd_2x2_3x3.packedWeightCount(cout: c.cout, cin: c.cin))
        f32_winograd_2x2_3x3.packWeights(w.pointer, cout: c.cout, cin: c.cin, into: packed.pointer)
        let eachU = GemmPacking.packedACount(m: c.cout, k: c.cin)
        let t = f32_winograd_2x2_3x3.Tiles(height: c.height, width: c.width)
        let bandRows = min(t.rows, c.bandRows ?? t.rows), stride = t.stride(bandRows: bandRows)
        let padded = AlignedBuffer(c.cin * t.paddedCount)
        let v = AlignedBuffer(positions * c.cin * stride), m = AlignedBuffer(positions * c.cout * stride)
        let scratch = AlignedBuffer(GemmDriver.scratchCount(k: c.cin))
        let y = AlignedBuffer([Float](repeating: .nan, count: c.cout * g.outPixels))
        for ci in 0..<c.cin {
            f32_winograd_2x2_3x3.pad(x.pointer + ci * g.inPixels, tiles: t, into: padded.pointer + ci * t.paddedCount)
        }
        var first = 0
        while first < t.rows {
            let rows = first..<min(t.rows, first + bandRows), n = rows.count * t.columns
            for ci in 0..<c.cin {
                f32_winograd_2x2_3x3.transformInput(padded.pointer + ci * t.paddedCount, tiles: t, rows: rows,
                                                    into: v.pointer + ci * stride, positionStride: c.cin * stride)
            }
            for xi in 0..<positions {
                GemmDriver.run(m: c.cout, n: n, k: c.cin, packedA: packed.pointer + xi * eachU,
                               b: RowMajorB(base: v.pointer + xi * c.cin * stride, rowStride: stride),
                               c: m.pointer + xi * c.cout * stride, ldc: stride, epilogue: .none,
                               panels: 0..<GemmDriver.panelCount(n: n), scratch: scratch.pointer)
            }
            for co in 0..<c.cout {
                f32_winograd_2x2_3x3.transformOutput(m.pointer + co * stride, positionStride: c.cout * stride, tiles: t,
                                                     rows: rows, bias: bias.pointer[co], lower: c.lower, upper: c.upper,
                                                     into: y.pointer + co * g.outPixels)
            }
            first = rows.upperBound
        }
        assertClose(y.array, expected.array, tolerance: 1e-5, "\(c)", file: file, line: line)
    }

    func testPlaneWidthsAndChannelTails() {
        // Tile columns 1, 8, 15, 16, 17 and 33: vector blocks of 16 tiles with and without tails.
        for (i, width) in [2, 16, 30, 32, 34, 66].enumerated() {
            for (j, cout) in [1, 6, 7, 13].enumerated() {
                run(Case(cin: 3 + j, cout: cout, height: 2 * (i % 3 + 1), width: width), seed: UInt64(10 * i + j))
            }
        }
    }

    func testBandsAndBounds() {
        run(Case(cin: 5, cout: 8, height: 12, width: 18, bandRows: 1), seed: 1)
        run(Case(cin: 4, cout: 3, height: 14, width: 34, bandRows: 3, lower: 0), seed: 2)
        run(Case(cin: 2, cout: 11, height: 10, width: 10, bandRows: 4, lower: 0, upper: 6), seed: 3)
        // The engine's threshold: as many input channels as `minChannels`.
        run(Case(cin: f32_winograd_2x2_3x3.minChannels, cout: 7, height: 8, width: 36, bandRows: 2), seed: 4)
    }

    func testRandomShapes() {
        var rng = TestRandom(seed: 99)
        for i in 0..<12 {
            let c = Case(cin: rng.int(1...20), cout: rng.int(1...20), height: 2 * rng.int(1...9), width: 2 * rng.int(1...40),
                         bandRows: rng.int(0...1) == 0 ? nil : rng.int(1...4), lower: rng.int(0...1) == 0 ? -.infinity : 0)
            run(c, seed: UInt64(200 + i))
        }
    }
}
