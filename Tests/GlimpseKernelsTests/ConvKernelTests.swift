import Foundation
import GlimpseKernels
import GlimpseTestSupport
import XCTest

/// Im2col GEMM, phase-plane and direct convolution kernels against their scalar references
/// (depthwise and pooling: `DepthwisePoolKernelTests`).
final class ConvKernelTests: XCTestCase {
    func randomGeometry(_ rng: inout TestRandom, channels: Int) -> ConvGeometry {
        randomConvGeometry(&rng, channels: channels)
    }

    func testIm2colGemmMatchesReference() {
        var rng = TestRandom(seed: 3)
        for _ in 0..<30 {
            let cin = rng.int(1...9), cout = rng.int(1...14)
            let g = randomGeometry(&rng, channels: cin)
            let x = AlignedBuffer(rng.floats(cin * g.inPixels)), w = AlignedBuffer(rng.floats(cout * g.patchSize))
            let bias = AlignedBuffer(rng.floats(cout))
            let packed = AlignedBuffer(GemmPacking.packedACount(m: cout, k: g.patchSize))
            GemmPacking.packA(w.pointer, m: cout, k: g.patchSize, rowStride: g.patchSize, colStride: 1, into: packed.pointer)
            let out = AlignedBuffer(cout * g.outPixels), ref = AlignedBuffer(cout * g.outPixels)
            let scratch = AlignedBuffer(GemmDriver.scratchCount(k: g.patchSize))
            GemmDriver.run(m: cout, n: g.outPixels, k: g.patchSize, packedA: packed.pointer,
                           b: Im2colPanelSource(input: x.pointer, geometry: g), c: out.pointer, ldc: g.outPixels,
                           epilogue: GemmEpilogue(rowBias: bias.pointer, lowerBound: 0),
                           panels: 0..<GemmDriver.panelCount(n: g.outPixels), scratch: scratch.pointer)
            f32_conv2d_reference(input: x.pointer, weights: w.pointer, bias: bias.pointer, output: ref.pointer,
                                 geometry: g, groups: 1, outChannelsPerGroup: cout, lowerBound: 0)
            assertClose(out.array, ref.array, tolerance: 1e-5, "\(g)")
        }
    }

    /// Stride-1 convolutions whose output is as wide as the input ("same" padding, symmetric or
    /// not): the shifted-plane packing with masked vector loads. Two images share one buffer and the
    /// packing of the second may read into the first (the readable range), and K spans several K
    /// blocks for the wide channel counts.
    func testShiftedPlaneIm2colMatchesReference() {
        var rng = TestRandom(seed: 31)
        for i in 0..<40 {
            let kh = rng.int(1...5), kw = rng.int(1...5), dh = rng.int(1...2), dw = rng.int(1...2)
            let cin = i % 5 == 0 ? rng.int(30...40) : rng.int(1...9), cout = rng.int(1...14)
            let h = rng.int(1...20), w = rng.int(1...45)
            let padTop = rng.int(0...(kh - 1) * dh), padBottom = rng.int(0...(kh - 1) * dh)
            let padLeft = rng.int(0...(kw - 1) * dw)
            let oh = h + padTop + padBottom - (kh - 1) * dh
            guard oh >= 1 else { continue }
            let g = ConvGeometry(inChannels: cin, inHeight: h, inWidth: w, kernelHeight: kh, kernelWidth: kw,
                                 strideH: 1, strideW: 1, dilationH: dh, dilationW: dw, padTop: padTop, padLeft: padLeft,
                                 outHeight: oh, outWidth: w)
            XCTAssertTrue(g.isShiftedPlane)
            let image = cin * g.inPixels
            let x = AlignedBuffer(rng.floats(2 * image)), wts = AlignedBuffer(rng.floats(cout * g.patchSize))
            let bias = AlignedBuffer(rng.floats(cout))
            let packed = AlignedBuffer(GemmPacking.packedACount(m: cout, k: g.patchSize))
            GemmPacking.packA(wts.pointer, m: cout, k: g.patchSize, rowStride: g.patchSize, colStride: 1, into: packed.pointer)
            let scratch = AlignedBuffer(GemmDriver.scratchCount(k: g.patchSize))
            for item in 0..<2 {
                let src = x.pointer + item * image
                let readable: Range<Int>? = i % 2 == 0 ? -item * image..<(2 - item) * image : nil
                let out = AlignedBuffer(cout * g.outPixels), ref = AlignedBuffer(cout * g.outPixels)
                GemmDriver.run(m: cout, n: g.outPixels, k: g.patchSize, packedA: packed.pointer,
                               b: Im2colPanelSource(input: src, geometry: g, readable: readable), c: out.pointer, ldc: g.outPixels,
                               epilogue: GemmEpilogue(rowBias: bias.pointer),
                               panels: 0..<GemmDriver.panelCount(n: g.outPixels), scratch: scratch.pointer)
                f32_conv2d_reference(input: src, weights: wts.pointer, bias: bias.pointer, output: ref.pointer,
                                     geometry: g, groups: 1, outChannelsPerGroup: cout)
                assertClose(out.array, ref.array, tolerance: 1e-4, "item \(item) \(g)")
            }
        }
    }

    /// `PhasePlaneSource`: strided, dilated, padded and unpadded convolutions computed over the flat output of
    /// the phase planes (filled in row ranges), then compacted in two column ranges (as two threads would) and in two row
    /// ranges; and, where the output is wide enough, over the output's own pixels (panels that cross
    /// a row end). Some channel counts make K span several K blocks, and the columns end in a tail.
    func testPhaseGemmMatchesReference() {
        var rng = TestRandom(seed: 41)
        var denseCases = 0
        for i in 0..<45 {
            let cin = i % 4 == 0 ? rng.int(30...40) : rng.int(1...9), cout = rng.int(1...14)
            var g = randomGeometry(&rng, channels: cin)
            if i % 3 == 0 {
                // Wide outputs (32 to 70 pixels), as a network's first layers have.
                g.inWidth = rng.int(64...140)
                g.outWidth = (g.inWidth + 2 * g.padLeft - (g.kernelWidth - 1) * g.dilationW - 1) / g.strideW + 1
            }
            let planes = PhasePlanes(g)
            let n = g.outHeight * planes.rowStride
            let stride = PhasePlaneSource.channelStride(planes)
            let x = AlignedBuffer(rng.floats(cin * g.inPixels)), wts = AlignedBuffer(rng.floats(cout * g.patchSize))
            let bias = AlignedBuffer(rng.floats(cout))
            let packed = AlignedBuffer(GemmPacking.packedACount(m: cout, k: g.patchSize))
            GemmPacking.packA(wts.pointer, m: cout, k: g.patchSize, rowStride: g.patchSize, colStride: 1, into: packed.pointer)
            // Garbage where the phases go: every value the GEMM reads must be written by `fill`. The
            // rows are filled in three ranges (as threads would), the last first: a range whose
            // stores ran into the next range's first row would leave garbage there.
            let phases = AlignedBuffer([Float](repeating: .nan, count: cin * stride))
            let cut1 = rng.int(0...planes.rows), cut2 = rng.int(cut1...planes.rows)
            for rows in [cut2..<planes.rows, cut1..<cut2, 0..<cut1] {
                PhasePlaneSource.fill(planes, input: x.pointer, rows: rows, phases: phases.pointer)
            }
            var taps = [Int](repeating: 0, count: g.kernelHeight * g.kernelWidth)
            taps.withUnsafeMutableBufferPointer { planes.tapOffsets($0.baseAddress!) }
            let flat = AlignedBuffer(cout * n), scratch = AlignedBuffer(GemmDriver.scratchCount(k: g.patchSize))
            func gemm(flat isFlat: Bool, columns: Int, into c: UnsafeMutablePointer<Float>) {
                taps.withUnsafeBufferPointer { t in
                    GemmDriver.run(m: cout, n: columns, k: g.patchSize, packedA: packed.pointer,
                                   b: PhasePlaneSource(phases: phases.pointer, channelStride: stride, tapOffsets: t.baseAddress!,
                                             taps: t.count, planes: planes, flat: isFlat),
                                   c: c, ldc: columns, epilogue: GemmEpilogue(rowBias: bias.pointer, lowerBound: 0),
                                   panels: 0..<GemmDriver.panelCount(n: columns), scratch: scratch.pointer)
                }
            }
            gemm(flat: true, columns: n, into: flat.pointer)
            let ref = AlignedBuffer(cout * g.outPixels)
            f32_conv2d_reference(input: x.pointer, weights: wts.pointer, bias: bias.pointer, output: ref.pointer,
                                 geometry: g, groups: 1, outChannelsPerGroup: cout, lowerBound: 0)
            if PhasePlaneSource.readsDense(planes) {
                let dense = AlignedBuffer(cout * g.outPixels)
                gemm(flat: false, columns: g.outPixels, into: dense.pointer)
                assertClose(dense.array, ref.array, tolerance: 1e-4, "dense, \(g)")
                denseCases += 1
            } else {
                XCTAssertTrue(g.outWidth < GemmTile.nr, "\(g)")
            }
            let byColumns = AlignedBuffer([Float](repeating: .nan, count: cout * g.outPixels))
            let half = n / 2
            PhasePlaneSource.compact(flat.pointer, ldFlat: n, rows: 0..<cout, columns: 0..<half, planes: planes, into: byColumns.pointer)
            PhasePlaneSource.compact(flat.pointer, ldFlat: n, rows: 0..<cout, columns: half..<n, planes: planes, into: byColumns.pointer)
            assertClose(byColumns.array, ref.array, tolerance: 1e-4, "columns, \(g)")
            let byRows = AlignedBuffer([Float](repeating: .nan, count: cout * g.outPixels))
            PhasePlaneSource.compact(flat.pointer, ldFlat: n, rows: 0..<cout / 2, columns: 0..<n, planes: planes, into: byRows.pointer)
            PhasePlaneSource.compact(flat.pointer, ldFlat: n, rows: cout / 2..<cout, columns: 0..<n, planes: planes, into: byRows.pointer)
            assertClose(byRows.array, ref.array, tolerance: 1e-4, "rows, \(g)")
        }
        XCTAssertGreaterThanOrEqual(denseCases, 10)
    }

    /// `f32_conv_8x16_direct` (short-reduction "same" convolutions) against the reference: output channel
    /// counts below, at and above the 8-channel block and the 16-channel pair (with the longer
    /// reductions the pair takes), planes whose pixel count is not a multiple of 16, bias, a
    /// residual and a clamp in the epilogue, and a second image read through the tensor-wide
    /// readable range.
    func testDirectConvMatchesReference() {
        var rng = TestRandom(seed: 41)
        var tested = 0, copiedCases = 0
        for i in 0..<40 {
            let kh = rng.int(1...5), kw = rng.int(2...5), dh = rng.int(1...2), dw = rng.int(1...2)
            let h = rng.int(1...20), w = rng.int(1...40)
            let padTop = rng.int(0...(kh - 1) * dh), padBottom = rng.int(0...(kh - 1) * dh)
            let padLeft = rng.int(0...(kw - 1) * dw)
            let oh = h + padTop + padBottom - (kh - 1) * dh
            let cout = [1, 5, 8, 11, 16, 20][i % 6]
            // Every other case with 16 or fewer output channels reduces over more than `maxPatch`.
            let long = cout <= f32_conv_8x16_direct.pairChannels && i % 12 < 6
            let most = long ? f32_conv_8x16_direct.maxPairPatch : f32_conv_8x16_direct.maxPatch
            let cin = max(1, min(rng.int(long ? 3...12 : 1...4), most / (kh * kw)))
            guard oh >= 1 else { continue }
            let g = ConvGeometry(inChannels: cin, inHeight: h, inWidth: w, kernelHeight: kh, kernelWidth: kw,
                                 strideH: 1, strideW: 1, dilationH: dh, dilationW: dw, padTop: padTop, padLeft: padLeft,
                                 outHeight: oh, outWidth: w)
            XCTAssertTrue(f32_conv_8x16_direct.applies(g, outChannels: cout), "\(g)")
            let image = cin * g.inPixels, outImage = cout * g.outPixels
            let x = AlignedBuffer(rng.floats(2 * image)), wts = AlignedBuffer(rng.floats(cout * g.patchSize))
            let bias = AlignedBuffer(rng.floats(cout)), residual = AlignedBuffer(rng.floats(outImage))
            let packed = AlignedBuffer(f32_conv_8x16_direct.packedCount(m: cout, k: g.patchSize))
            f32_conv_8x16_direct.pack(wts.pointer, m: cout, k: g.patchSize, into: packed.pointer)
            for item in 0..<2 {
                let src = x.pointer + item * image
                let out = AlignedBuffer(outImage), ref = AlignedBuffer(outImage)
                let epilogue = GemmEpilogue(rowBias: bias.pointer, residual: residual.pointer, residualStride: g.outPixels,
                                            lowerBound: -0.5, upperBound: 2)
                // Two calls over a split of the blocks, as threads would run them.
                let blocks = f32_conv_8x16_direct.blockCount(g), split = blocks / 2
                for part in [0..<split, split..<blocks] {
                    f32_conv_8x16_direct.run(input: src, readable: -item * image..<(2 - item) * image, weights: packed.pointer, m: cout,
                                   geometry: g, output: out.pointer, epilogue: epilogue, blocks: part)
                }
                f32_conv2d_reference(input: src, weights: wts.pointer, bias: bias.pointer, output: ref.pointer,
                                     geometry: g, groups: 1, outChannelsPerGroup: cout)
                for t in 0..<outImage { ref.pointer[t] = min(max(ref.pointer[t] + residual.pointer[t], -0.5), 2) }
                assertClose(out.array, ref.array, tolerance: 1e-4, "item \(item) cout \(cout) \(g)")
                guard f32_conv_8x16_direct.readsCopies(g, outChannels: cout) else { continue }
                // Through the shifted copies, over three parts (a first block mid-row, a part of one
                // block), with scratch that still holds another part's copies and NaN elsewhere.
                let copied = AlignedBuffer(outImage)
                let scratch = AlignedBuffer([Float](repeating: .nan, count: f32_conv_8x16_direct.copyFloats(g)))
                for part in [0..<min(1, split), min(1, split)..<split, split..<blocks] {
                    f32_conv_8x16_direct.run(input: src, readable: -item * image..<(2 - item) * image, weights: packed.pointer, m: cout,
                                   geometry: g, output: copied.pointer, epilogue: epilogue, blocks: part, copies: scratch.pointer)
                }
                assertClose(copied.array, ref.array, tolerance: 1e-4, "copies, item \(item) cout \(cout) \(g)")
                copiedCases += 1
            }
            tested += 1
        }
        XCTAssertGreaterThan(tested, 30)
        XCTAssertGreaterThan(copiedCases, 20)
    }

    /// `f32_conv_8x16_direct` on small planes with long reductions and many output channels (the
    /// last layers of CIFAR-10 networks): 4×4 and 8×8 planes, a 5×3 one (a short pixel block), output
    /// channels a multiple of 16 and not (pairs and a last single block), against the reference.
    func testDirectConvOnSmallPlanesMatchesReference() throws {
        try XCTSkipUnless(f32_conv_8x16_direct.pairs, "the small-plane rule needs the paired blocks (AVX-512 targets)")
        var rng = TestRandom(seed: 43)
        for (cin, h, w, cout) in [(64, 4, 4, 128), (128, 4, 4, 128), (32, 8, 8, 64), (16, 5, 3, 24), (40, 4, 4, 72)] {
            let g = ConvGeometry(inChannels: cin, inHeight: h, inWidth: w, kernelHeight: 3, kernelWidth: 3,
                                 strideH: 1, strideW: 1, dilationH: 1, dilationW: 1, padTop: 1, padLeft: 1,
                                 outHeight: h, outWidth: w)
            XCTAssertTrue(f32_conv_8x16_direct.applies(g, outChannels: cout), "\(g)")
            let image = cin * g.inPixels, outImage = cout * g.outPixels
            let x = AlignedBuffer(rng.floats(image)), wts = AlignedBuffer(rng.floats(cout * g.patchSize))
            let bias = AlignedBuffer(rng.floats(cout))
            let packed = AlignedBuffer(f32_conv_8x16_direct.packedCount(m: cout, k: g.patchSize))
            f32_conv_8x16_direct.pack(wts.pointer, m: cout, k: g.patchSize, into: packed.pointer)
            let out = AlignedBuffer(outImage), ref = AlignedBuffer(outImage)
            f32_conv_8x16_direct.run(input: x.pointer, readable: 0..<image, weights: packed.pointer, m: cout, geometry: g,
                                     output: out.pointer, epilogue: GemmEpilogue(rowBias: bias.pointer),
                                     blocks: 0..<f32_conv_8x16_direct.blockCount(g))
            f32_conv2d_reference(input: x.pointer, weights: wts.pointer, bias: bias.pointer, output: ref.pointer,
                                 geometry: g, groups: 1, outChannelsPerGroup: cout)
            assertClose(out.array, ref.array, tolerance: 1e-3, "cout \(cout) \(g)")
        }
        // Larger planes keep the GEMM for these reductions.
        let wide = ConvGeometry(inChannels: 64, inHeight: 16, inWidth: 16, kernelHeight: 3, kernelWidth: 3, strideH: 1, strideW: 1,
                                dilationH: 1, dilationW: 1, padTop: 1, padLeft: 1, outHeight: 16, outWidth: 16)
        XCTAssertFalse(f32_conv_8x16_direct.applies(wide, outChannels: 64))
        XCTAssertFalse(f32_conv_8x16_direct.takes(patch: 64, outChannels: 64, taps: 1), "1×1 kernels stay with the GEMM")
    }

    /// `f32_dwconv_8x16_same` against the grouped reference: channel counts around the 8-channel block
    /// (short last blocks), dilation, asymmetric "same" padding, planes below and above 16 pixels,
    /// and the second of two images sharing one buffer, so whole-vector loads near the buffer's ends
    /// are exercised. Bias, residual and clamp come through the epilogue.
    func testIm2colMatrixMatchesScalar() {
        var rng = TestRandom(seed: 23)
        for i in 0..<30 {
            var g = randomGeometry(&rng, channels: rng.int(1...3))
            if i % 3 == 0 {  // wide stride-2 rows (the first layer of MobileNet/EfficientNet/SqueezeNet)
                let w = rng.int(33...90)
                g = ConvGeometry(inChannels: 3, inHeight: 9, inWidth: w, kernelHeight: 3, kernelWidth: 3,
                                 strideH: 2, strideW: 2, dilationH: 1, dilationW: 1, padTop: i % 2, padLeft: i % 2,
                                 outHeight: (9 + 2 * (i % 2) - 3) / 2 + 1, outWidth: (w + 2 * (i % 2) - 3) / 2 + 1)
            }
            let x = AlignedBuffer(rng.floats(g.inChannels * g.inPixels))
            let ld = Im2colMatrix.rowStride(g)
            let out = AlignedBuffer(g.patchSize * ld)
            if i % 2 == 0 {
                Im2colMatrix.fill(input: x.pointer, geometry: g, rows: 0..<g.patchSize, into: out.pointer)
            } else {
                // In three column ranges cut mid-row, as tasks fill their own column panels.
                let n = g.outPixels, cuts = [0, rng.int(0...n), rng.int(0...n), n].sorted()
                for j in 0..<3 {
                    Im2colMatrix.fill(input: x.pointer, geometry: g, rows: 0..<g.patchSize,
                                      columns: cuts[j]..<cuts[j + 1], into: out.pointer)
                }
            }
            var expected = [Float]()
            for ci in 0..<g.inChannels {
                for kh in 0..<g.kernelHeight {
                    for kw in 0..<g.kernelWidth {
                        for oh in 0..<g.outHeight {
                            for ow in 0..<g.outWidth {
                                let ih = oh * g.strideH - g.padTop + kh * g.dilationH
                                let iw = ow * g.strideW - g.padLeft + kw * g.dilationW
                                let inside = ih >= 0 && ih < g.inHeight && iw >= 0 && iw < g.inWidth
                                expected.append(inside ? x.pointer[ci * g.inPixels + ih * g.inWidth + iw] : 0)
                            }
                        }
                    }
                }
            }
            // Rows are `ld` apart; a stride of 2 leaves slack after each, which is not compared.
            let n = g.outPixels
            let rows = (0..<g.patchSize).flatMap { k in out.array[(k * ld)..<(k * ld + n)] }
            assertClose(rows, expected, tolerance: 0, "\(g)")
        }
    }
}
