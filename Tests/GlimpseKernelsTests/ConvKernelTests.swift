import GlimpseKernels
import XCTest

/// Im2col GEMM, direct depthwise and pooling kernels against their scalar references.
final class ConvKernelTests: XCTestCase {
    func randomGeometry(_ rng: inout TestRandom, channels: Int) -> ConvGeometry {
        let kh = rng.int(1...5), kw = rng.int(1...5)
        let sh = rng.int(1...2), sw = rng.int(1...3)
        let dh = rng.int(1...2), dw = rng.int(1...2)
        let ph = rng.int(0...kh - 1), pw = rng.int(0...kw - 1)
        let h = rng.int((kh - 1) * dh + 1...30), w = rng.int((kw - 1) * dw + 1...40)
        let oh = (h + 2 * ph - (kh - 1) * dh - 1) / sh + 1, ow = (w + 2 * pw - (kw - 1) * dw - 1) / sw + 1
        return ConvGeometry(inChannels: channels, inHeight: h, inWidth: w, kernelHeight: kh, kernelWidth: kw,
                            strideH: sh, strideW: sw, dilationH: dh, dilationW: dw, padTop: ph, padLeft: pw,
                            outHeight: oh, outWidth: ow)
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
                           b: Im2colB(input: x.pointer, geometry: g), c: out.pointer, ldc: g.outPixels,
                           epilogue: GemmEpilogue(rowBias: bias.pointer, lowerBound: 0),
                           panels: 0..<GemmDriver.panelCount(n: g.outPixels), scratch: scratch.pointer)
            conv2d_f32_reference(input: x.pointer, weights: w.pointer, bias: bias.pointer, output: ref.pointer,
                                 geometry: g, groups: 1, outChannelsPerGroup: cout, lowerBound: 0)
            assertClose(out.array, ref.array, tolerance: 1e-5, "\(g)")
        }
    }

    func testDepthwiseMatchesReference() {
        var rng = TestRandom(seed: 5)
        for _ in 0..<40 {
            let g = randomGeometry(&rng, channels: 1)
            let x = AlignedBuffer(rng.floats(g.inPixels)), w = AlignedBuffer(rng.floats(g.kernelHeight * g.kernelWidth))
            let bias = rng.float()
            let out = AlignedBuffer(g.outPixels), ref = AlignedBuffer(g.outPixels)
            let scratch = AlignedBuffer(DepthwiseConv.scratchCount(g))
            dwconv_f32_direct(input: x.pointer, weights: w.pointer, bias: bias, output: out.pointer, geometry: g,
                              lowerBound: 0, upperBound: 6, scratch: scratch.pointer)
            let b = AlignedBuffer([bias])
            conv2d_f32_reference(input: x.pointer, weights: w.pointer, bias: b.pointer, output: ref.pointer,
                                 geometry: g, groups: 1, outChannelsPerGroup: 1, lowerBound: 0, upperBound: 6)
            assertClose(out.array, ref.array, tolerance: 1e-5, "\(g)")
        }
    }

    func testPoolingMatchesReference() {
        var rng = TestRandom(seed: 9)
        for i in 0..<40 {
            var g = randomGeometry(&rng, channels: 1)
            g.dilationH = 1
            g.dilationW = 1
            g.outHeight = (g.inHeight + 2 * g.padTop - g.kernelHeight) / g.strideH + 1
            g.outWidth = (g.inWidth + 2 * g.padLeft - g.kernelWidth) / g.strideW + 1
            let kind: PoolKind = i % 3 == 0 ? .max : .average(countIncludePad: i % 3 == 1)
            let x = AlignedBuffer(rng.floats(g.inPixels))
            let out = AlignedBuffer(g.outPixels), ref = AlignedBuffer(g.outPixels)
            let scratch = AlignedBuffer(Pool2D.scratchCount(g))
            pool2d_f32(input: x.pointer, output: out.pointer, geometry: g, kind: kind, scratch: scratch.pointer)
            pool2d_f32_reference(input: x.pointer, output: ref.pointer, geometry: g, kind: kind)
            assertClose(out.array, ref.array, tolerance: 1e-5, "\(kind) \(g)")
        }
    }
}
