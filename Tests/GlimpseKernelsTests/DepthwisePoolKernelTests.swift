import Foundation
import GlimpseKernels
import GlimpseTestSupport
import XCTest

/// Depthwise and pooling kernels (shifted-plane, lane, row and fused-epilogue depthwise; row and
/// stride-2 pooling) against their scalar references.
final class DepthwisePoolKernelTests: XCTestCase {
    func randomGeometry(_ rng: inout TestRandom, channels: Int) -> ConvGeometry {
        randomConvGeometry(&rng, channels: channels)
    }

    func testShiftedDepthwiseMatchesReference() {
        var rng = TestRandom(seed: 43)
        var tested = 0
        for i in 0..<40 {
            let kh = rng.int(1...5), kw = rng.int(1...5), dh = rng.int(1...2), dw = rng.int(1...2)
            let h = rng.int(1...20), w = rng.int(1...30)
            let padTop = rng.int(0...(kh - 1) * dh), padBottom = rng.int(0...(kh - 1) * dh)
            let padLeft = rng.int(0...(kw - 1) * dw)
            let oh = h + padTop + padBottom - (kh - 1) * dh
            guard oh >= 1 else { continue }
            let g = ConvGeometry(inChannels: 1, inHeight: h, inWidth: w, kernelHeight: kh, kernelWidth: kw,
                                 strideH: 1, strideW: 1, dilationH: dh, dilationW: dw, padTop: padTop, padLeft: padLeft,
                                 outHeight: oh, outWidth: w)
            XCTAssertTrue(f32_dwconv_8x16_same.applies(g), "\(g)")
            let channels = [1, 5, 8, 11, 16, 20][i % 6]
            let image = channels * g.inPixels, outImage = channels * g.outPixels
            let taps = kh * kw
            let x = AlignedBuffer(rng.floats(2 * image)), wts = AlignedBuffer(rng.floats(channels * taps))
            let bias = AlignedBuffer(rng.floats(channels)), residual = AlignedBuffer(rng.floats(outImage))
            let packed = AlignedBuffer(f32_dwconv_8x16_same.packedCount(channels: channels, taps: taps))
            f32_dwconv_8x16_same.pack(wts.pointer, channels: channels, taps: taps, into: packed.pointer)
            for item in 0..<2 {
                let src = x.pointer + item * image
                let out = AlignedBuffer(outImage), ref = AlignedBuffer(outImage)
                // Four calls: the channels split at a block boundary, the 16-pixel blocks split in two
                // (as threads split them).
                let split = min(channels, f32_dwconv_8x16_same.channelBlock)
                let blocks = (g.outPixels + 15) / 16, half = blocks / 2
                for part in [0..<split, split..<channels] {
                    for pixelBlocks in [0..<half, half..<blocks] {
                        let c0 = part.lowerBound
                        // Every other case without a residual: short blocks then take the vector epilogue.
                        let epilogue = GemmEpilogue(rowBias: bias.pointer + c0,
                                                    residual: i % 2 == 0 ? residual.pointer + c0 * g.outPixels : nil,
                                                    residualStride: g.outPixels, lowerBound: -0.5, upperBound: 2)
                        let scratch = AlignedBuffer(f32_dwconv_8x16_same.scratchCount(g))
                        f32_dwconv_8x16_same.run(input: src, readable: -item * image..<(2 - item) * image, weights: packed.pointer,
                                             channels: part, blocks: pixelBlocks, geometry: g, output: out.pointer,
                                             epilogue: epilogue, scratch: scratch.pointer)
                    }
                }
                depthwiseReference(src, wts, bias, residual: i % 2 == 0 ? residual : nil, g, channels: channels, into: ref)
                assertClose(out.array, ref.array, tolerance: 1e-4, "item \(item) channels \(channels) \(g)")
            }
            tested += 1
        }
        XCTAssertGreaterThan(tested, 30)
    }

    /// `f32_dwconv_16c_lanes`: stride-2 depthwise convolutions of small planes (kernels 1–7, any padding,
    /// inputs with rows or columns the outputs never read, planes under 16 pixels), and stride 1
    /// with kernels of 5×5 to 7×7 (outputs 1 to 3 wide, and widths that are not a multiple of the
    /// 4 pixels computed at once, whose last four overlap the ones before), with channel
    /// counts below, at and above one 16-channel block, split in two calls at a block boundary as
    /// threads split them; every other case with a residual. The output and the scratch start as
    /// NaN, so every output value and every padding value read must be written.
    func testLaneDepthwiseMatchesReference() {
        var rng = TestRandom(seed: 47)
        var tested = 0, stride1 = 0
        for i in 0..<72 {
            // Every third case at stride 1, which takes kernels of 5×5 to 7×7 only.
            let stride = i % 3 == 2 ? 1 : 2
            let kh0 = rng.int(1...7), kw0 = rng.int(1...7)
            let kh = stride == 1 ? 5 + kh0 % 3 : kh0, kw = stride == 1 ? 5 + kw0 % 3 : kw0
            let h = rng.int(max(1, kh - 2)...16), w = rng.int(max(1, kw - 2)...16)
            let padTop = rng.int(0...(kh - 1)), padBottom = rng.int(0...(kh - 1))
            let padLeft = rng.int(0...(kw - 1)), padRight = rng.int(0...(kw - 1))
            let oh = (h + padTop + padBottom - kh) / stride + 1, ow = (w + padLeft + padRight - kw) / stride + 1
            guard oh >= 1, ow >= 1, h + padTop + padBottom >= kh, w + padLeft + padRight >= kw else { continue }
            let g = ConvGeometry(inChannels: 1, inHeight: h, inWidth: w, kernelHeight: kh, kernelWidth: kw,
                                 strideH: stride, strideW: stride, dilationH: 1, dilationW: 1, padTop: padTop, padLeft: padLeft,
                                 outHeight: oh, outWidth: ow)
            guard f32_dwconv_16c_lanes.applies(g) else { continue }  // over the largest plane it takes
            let channels = [1, 7, 16, 21, 32, 37][i % 6]
            let image = channels * g.inPixels, outImage = channels * g.outPixels, taps = kh * kw
            let x = AlignedBuffer(rng.floats(image)), wts = AlignedBuffer(rng.floats(channels * taps))
            let bias = AlignedBuffer(rng.floats(channels)), residual = AlignedBuffer(rng.floats(outImage))
            let packed = AlignedBuffer(f32_dwconv_16c_lanes.packedCount(channels: channels, taps: taps))
            f32_dwconv_16c_lanes.pack(wts.pointer, channels: channels, taps: taps, into: packed.pointer)
            let out = AlignedBuffer([Float](repeating: .nan, count: outImage)), ref = AlignedBuffer(outImage)
            let split = min(channels, f32_dwconv_16c_lanes.channelBlock)
            // Scratch full of garbage, as a workspace that other layers used: the padding must be written.
            let scratch = AlignedBuffer([Float](repeating: .nan, count: f32_dwconv_16c_lanes.scratchCount(g)))
            for part in [0..<split, split..<channels] {
                let c0 = part.lowerBound
                let epilogue = GemmEpilogue(rowBias: bias.pointer + c0,
                                            residual: i % 2 == 0 ? residual.pointer + c0 * g.outPixels : nil,
                                            residualStride: g.outPixels, lowerBound: -0.5, upperBound: 2)
                f32_dwconv_16c_lanes.run(input: x.pointer, weights: packed.pointer, channels: part, geometry: g,
                                  output: out.pointer, epilogue: epilogue, scratch: scratch.pointer)
            }
            depthwiseReference(x.pointer, wts, bias, residual: i % 2 == 0 ? residual : nil, g, channels: channels, into: ref)
            assertClose(out.array, ref.array, tolerance: 1e-4, "channels \(channels) \(g)")
            tested += 1
            if stride == 1 { stride1 += 1 }
        }
        XCTAssertGreaterThan(tested, 40)
        XCTAssertGreaterThan(stride1, 15)
    }

    /// The grouped reference of a depthwise convolution, plus the residual (if any), clamped to
    /// [−0.5, 2]: the epilogue the depthwise kernel tests use.
    private func depthwiseReference(_ x: UnsafePointer<Float>, _ wts: AlignedBuffer, _ bias: AlignedBuffer, residual: AlignedBuffer?,
                                    _ g: ConvGeometry, channels: Int, into ref: AlignedBuffer) {
        f32_conv2d_reference(input: x, weights: wts.pointer, bias: bias.pointer, output: ref.pointer,
                             geometry: g, groups: channels, outChannelsPerGroup: 1)
        for t in 0..<channels * g.outPixels {
            ref.pointer[t] = min(max(ref.pointer[t] + (residual?.pointer[t] ?? 0), -0.5), 2)
        }
    }

    /// `f32_dwconv_16c_lanes.transpose`: row i of the result is lane i of every source vector.
    func testLaneTranspose() {
        let source = AlignedBuffer((0..<256).map { Float($0) })
        var rows = [[Float]](repeating: [], count: 16)
        f32_dwconv_16c_lanes.transpose(UnsafeRawPointer(source.pointer), stride: 64) { i, v in rows[i] = (0..<16).map { v[$0] } }
        for i in 0..<16 { XCTAssertEqual(rows[i], (0..<16).map { Float($0 * 16 + i) }, "row \(i)") }
    }

    /// `f32_dwconv_3x3_rows` against the grouped reference: stride 1 and 2, padding 0 to 2 on each side
    /// (asymmetric too), outputs narrower than 16 (rows spilling into the next) and 16 wide and
    /// wider (a last vector overlapping the one before),
    /// heights from one row up (short row blocks, rows at the top and bottom edges), and planes back
    /// to back with the tensor-wide readable range, so loads near the buffer's ends take the lane by
    /// lane path. Epilogues: a clamp alone (the branch-free store), and a residual with swish read
    /// from the output buffer itself (in place), which the overlapping vector must not apply twice.
    func testRowDepthwiseMatchesReference() {
        var rng = TestRandom(seed: 47)
        var tested = 0
        for i in 0..<64 {
            let s = i / 8 % 2 + 1
            let padTop = rng.int(0...2), padBottom = rng.int(0...2), padLeft = rng.int(0...2), padRight = rng.int(0...2)
            let ow = [16, 17, 23, 32, 40, 56, 8, 14][i % 8] + (i % 5 == 0 ? rng.int(0...9) : 0) - (i % 8 == 7 ? rng.int(0...6) : 0)
            let w = (ow - 1) * s + 3 - padLeft - padRight
            let h = rng.int(max(1, 3 - padTop - padBottom)...12)
            let oh = (h + padTop + padBottom - 3) / s + 1
            guard w >= 1, oh >= 1 else { continue }
            let g = ConvGeometry(inChannels: 1, inHeight: h, inWidth: w, kernelHeight: 3, kernelWidth: 3,
                                 strideH: s, strideW: s, dilationH: 1, dilationW: 1, padTop: padTop, padLeft: padLeft,
                                 outHeight: oh, outWidth: ow)
            XCTAssertTrue(f32_dwconv_3x3_rows.applies(g), "\(g)")
            let channels = 3
            let x = AlignedBuffer(rng.floats(channels * g.inPixels)), wts = AlignedBuffer(rng.floats(channels * 9))
            let bias = AlignedBuffer(rng.floats(channels)), residual = AlignedBuffer(rng.floats(channels * g.outPixels))
            let inPlace = i % 3 == 0, swishOnly = i % 3 == 1
            let ref = AlignedBuffer(channels * g.outPixels)
            f32_conv2d_reference(input: x.pointer, weights: wts.pointer, bias: bias.pointer, output: ref.pointer,
                                 geometry: g, groups: channels, outChannelsPerGroup: 1)
            let out = AlignedBuffer(inPlace ? residual.array : [Float](repeating: .nan, count: channels * g.outPixels))
            for c in 0..<channels {
                let start = c * g.inPixels
                let epilogue = inPlace
                    ? GemmEpilogue(residual: out.pointer + c * g.outPixels, lowerBound: -1, upperBound: 3, swish: true)
                    : swishOnly ? GemmEpilogue(swish: true) : GemmEpilogue(lowerBound: -0.5, upperBound: 2)
                f32_dwconv_3x3_rows.run(input: x.pointer + start, readable: -start..<(channels * g.inPixels - start),
                                 weights: wts.pointer + c * 9, bias: bias.pointer[c], geometry: g,
                                 output: out.pointer + c * g.outPixels, epilogue: epilogue)
            }
            let expected = (0..<channels * g.outPixels).map { j -> Float in
                if swishOnly { return ref.pointer[j] / (1 + Float(Foundation.exp(Double(-ref.pointer[j])))) }
                guard inPlace else { return min(max(ref.pointer[j], -0.5), 2) }
                let v = min(max(ref.pointer[j] + residual.pointer[j], -1), 3)
                return v / (1 + Float(Foundation.exp(Double(-v))))
            }
            assertClose(out.array, expected, tolerance: 1e-5, "in place \(inPlace), swish only \(swishOnly) \(g)")
            tested += 1
        }
        XCTAssertGreaterThan(tested, 56)
    }

    /// `f32_pool2d_rows` over every path of its horizontal pass (stride 1 and 2 vectors, lane by lane at
    /// stride 3), with dilation, asymmetric and ceil-mode padding, planes narrower and wider than a
    /// vector, and planes back to back so a whole-vector store at a plane's end cannot run into the next.
    func testRowPoolMatchesReference() {
        var rng = TestRandom(seed: 37)
        var strides = [0, 0, 0]
        for i in 0..<90 {
            let kh = rng.int(1...4), kw = rng.int(1...4)
            let sh = rng.int(1...3), sw = i % 3 + 1
            let dh = rng.int(1...2), dw = rng.int(1...2)
            let padTop = rng.int(0...(kh - 1)), padLeft = rng.int(0...(kw - 1))
            let padBottom = rng.int(0...(kh - 1)), padRight = rng.int(0...(kw - 1))
            let h = rng.int(((kh - 1) * dh + 1)...40), w = rng.int(((kw - 1) * dw + 1)...130)
            let ceil = i % 4 == 0
            var outH = (h + padTop + padBottom - (kh - 1) * dh - 1 + (ceil ? sh - 1 : 0)) / sh + 1
            var outW = (w + padLeft + padRight - (kw - 1) * dw - 1 + (ceil ? sw - 1 : 0)) / sw + 1
            // As in ONNX's ceil mode, the last window starts inside the input or its leading padding.
            if (outH - 1) * sh - padTop >= h { outH -= 1 }
            if (outW - 1) * sw - padLeft >= w { outW -= 1 }
            let g = ConvGeometry(inChannels: 1, inHeight: h, inWidth: w, kernelHeight: kh, kernelWidth: kw,
                                 strideH: sh, strideW: sw, dilationH: dh, dilationW: dw, padTop: padTop, padLeft: padLeft,
                                 outHeight: outH, outWidth: outW)
            strides[sw - 1] += 1
            let kind: PoolKind = i % 3 == 0 ? .max : .average(countIncludePad: i % 2 == 0)
            let x = AlignedBuffer(rng.floats(3 * g.inPixels))
            let out = AlignedBuffer(3 * g.outPixels), ref = AlignedBuffer(3 * g.outPixels)
            let scratch = AlignedBuffer(Pool2D.scratchCount(g))
            let pool = f32_pool2d_rows(geometry: g, kind: kind, scratch: scratch.pointer)
            for p in 0..<3 { pool.run(input: x.pointer + p * g.inPixels, output: out.pointer + p * g.outPixels) }
            for p in (0..<3).reversed() {
                f32_pool2d_reference(input: x.pointer + p * g.inPixels, output: ref.pointer + p * g.outPixels, geometry: g,
                                     kind: kind)
            }
            assertClose(out.array, ref.array, tolerance: 1e-5, "\(kind) \(g)")
        }
        XCTAssertEqual(strides, [30, 30, 30])
    }

    /// `f32_pool2d_rows`'s stride-2 max path, which reads windows straight from the input: widths below,
    /// at and above one and two vectors, 1–3 taps each way, vertical stride and dilation, planes
    /// back to back, read with the whole tensor readable and with only the plane (its last rows
    /// then go lane by lane). Every other case is a 3×3 window without dilation (its own path).
    func testStride2MaxPoolMatchesReference() {
        var rng = TestRandom(seed: 41)
        for i in 0..<60 {
            let square = i % 2 == 0
            let kh = square ? 3 : rng.int(1...3), kw = square ? 3 : rng.int(1...3), sh = rng.int(1...2)
            let dh = square ? 1 : rng.int(1...2)
            let h = rng.int(((kh - 1) * dh + 1)...30), w = [kw, 15, 16, 17, 31, 33, 34, 35, 55, 111][(i / 2) % 10] + rng.int(0...2)
            let g = ConvGeometry(inChannels: 1, inHeight: h, inWidth: w, kernelHeight: kh, kernelWidth: kw,
                                 strideH: sh, strideW: 2, dilationH: dh, dilationW: 1, padTop: 0, padLeft: 0,
                                 outHeight: (h - (kh - 1) * dh - 1) / sh + 1, outWidth: (w - kw) / 2 + 1)
            let scratch = AlignedBuffer(Pool2D.scratchCount(g))
            let pool = f32_pool2d_rows(geometry: g, kind: .max, scratch: scratch.pointer)
            XCTAssertTrue(pool.readsInput, "\(g)")
            let x = AlignedBuffer(rng.floats(3 * g.inPixels))
            let out = AlignedBuffer(3 * g.outPixels), ref = AlignedBuffer(3 * g.outPixels)
            let wholeTensor = i % 2 == 0
            for p in 0..<3 {
                pool.run(input: x.pointer + p * g.inPixels, output: out.pointer + p * g.outPixels,
                         readable: wholeTensor ? (-p * g.inPixels)..<((3 - p) * g.inPixels) : nil)
            }
            for p in (0..<3).reversed() {
                f32_pool2d_reference(input: x.pointer + p * g.inPixels, output: ref.pointer + p * g.outPixels, geometry: g,
                                     kind: .max)
            }
            assertClose(out.array, ref.array, tolerance: 0, "whole tensor \(wholeTensor) \(g)")
        }
    }

    /// Max pooling of planes narrower than a vector at strides 3 and 4 (the row path's lane-by-lane
    /// columns): kernels of 1–4 each way, dilation, padding on every side, ceil-mode windows that
    /// start in the last column, and widths from 1 to 15.
    func testNarrowStridedMaxPoolMatchesReference() {
        var rng = TestRandom(seed: 43)
        for i in 0..<80 {
            let kh = rng.int(1...4), kw = rng.int(1...4), sh = rng.int(1...4), sw = 3 + i % 2
            let dh = rng.int(1...2), dw = rng.int(1...2)
            let padTop = rng.int(0...(kh - 1)), padLeft = rng.int(0...(kw - 1))
            let padBottom = rng.int(0...(kh - 1)), padRight = rng.int(0...(kw - 1))
            let h = rng.int(((kh - 1) * dh + 1)...20), w = rng.int(max(1, (kw - 1) * dw + 1 - padLeft - padRight)...15)
            let ceil = i % 3 == 0
            var outH = (h + padTop + padBottom - (kh - 1) * dh - 1 + (ceil ? sh - 1 : 0)) / sh + 1
            var outW = (w + padLeft + padRight - (kw - 1) * dw - 1 + (ceil ? sw - 1 : 0)) / sw + 1
            if (outH - 1) * sh - padTop >= h { outH -= 1 }
            if (outW - 1) * sw - padLeft >= w { outW -= 1 }
            guard outH > 0, outW > 0 else { continue }
            let g = ConvGeometry(inChannels: 1, inHeight: h, inWidth: w, kernelHeight: kh, kernelWidth: kw,
                                 strideH: sh, strideW: sw, dilationH: dh, dilationW: dw, padTop: padTop, padLeft: padLeft,
                                 outHeight: outH, outWidth: outW)
            let x = AlignedBuffer(rng.floats(2 * g.inPixels))
            let out = AlignedBuffer(2 * g.outPixels), ref = AlignedBuffer(2 * g.outPixels)
            let scratch = AlignedBuffer(Pool2D.scratchCount(g))
            let pool = f32_pool2d_rows(geometry: g, kind: .max, scratch: scratch.pointer)
            for p in 0..<2 { pool.run(input: x.pointer + p * g.inPixels, output: out.pointer + p * g.outPixels) }
            for p in 0..<2 {
                f32_pool2d_reference(input: x.pointer + p * g.inPixels, output: ref.pointer + p * g.outPixels, geometry: g, kind: .max)
            }
            assertClose(out.array, ref.array, tolerance: 0, "\(g)")
        }
        // mnist-8's second pool: 3×3 at stride 3 on 14×14.
        let g = ConvGeometry(inChannels: 1, inHeight: 14, inWidth: 14, kernelHeight: 3, kernelWidth: 3, strideH: 3, strideW: 3,
                             dilationH: 1, dilationW: 1, padTop: 0, padLeft: 0, outHeight: 4, outWidth: 4)
        let x = AlignedBuffer(rng.floats(g.inPixels)), out = AlignedBuffer(g.outPixels), ref = AlignedBuffer(g.outPixels)
        let scratch = AlignedBuffer(Pool2D.scratchCount(g))
        f32_pool2d(input: x.pointer, output: out.pointer, geometry: g, kind: .max, scratch: scratch.pointer)
        f32_pool2d_reference(input: x.pointer, output: ref.pointer, geometry: g, kind: .max)
        XCTAssertEqual(out.array, ref.array)
    }

    /// Planes at most 16 wide with windows inside across (`f32_pool2d_rows.narrow`), max and average,
    /// three planes back to back with the tensor readable around each: every row but the last
    /// plane's final ones takes the vector path, those the row buffer.
    func testNarrowPlanesInRegistersMatchReference() {
        var rng = TestRandom(seed: 47)
        let kinds: [PoolKind] = [.max, .average(countIncludePad: true), .average(countIncludePad: false)]
        for i in 0..<120 {
            let kh = rng.int(1...3), kw = rng.int(1...3), sh = rng.int(1...3), sw = rng.int(1...4), dh = rng.int(1...2), dw = rng.int(1...2)
            let w = rng.int(((kw - 1) * dw + 1)...16), h = rng.int(((kh - 1) * dh + 1)...12)
            let padTop = rng.int(0...(kh - 1)), padBottom = rng.int(0...(kh - 1))
            let outW = (w - (kw - 1) * dw - 1) / sw + 1
            var outH = (h + padTop + padBottom - (kh - 1) * dh - 1) / sh + 1
            if (outH - 1) * sh - padTop >= h { outH -= 1 }
            guard outH > 0 else { continue }
            let g = ConvGeometry(inChannels: 1, inHeight: h, inWidth: w, kernelHeight: kh, kernelWidth: kw,
                                 strideH: sh, strideW: sw, dilationH: dh, dilationW: dw, padTop: padTop, padLeft: 0,
                                 outHeight: outH, outWidth: outW)
            let kind = kinds[i % 3], planes = 3
            let x = AlignedBuffer(rng.floats(planes * g.inPixels))
            let out = AlignedBuffer(planes * g.outPixels), ref = AlignedBuffer(planes * g.outPixels)
            let scratch = AlignedBuffer(Pool2D.scratchCount(g))
            let pool = f32_pool2d_rows(geometry: g, kind: kind, scratch: scratch.pointer)
            XCTAssertTrue(pool.narrow, "\(g)")
            for p in 0..<planes {
                pool.run(input: x.pointer + p * g.inPixels, output: out.pointer + p * g.outPixels,
                         readable: (-p * g.inPixels)..<((planes - p) * g.inPixels))
                f32_pool2d_reference(input: x.pointer + p * g.inPixels, output: ref.pointer + p * g.outPixels, geometry: g, kind: kind)
            }
            assertClose(out.array, ref.array, tolerance: 1e-5, "\(g) \(kind)")
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
            f32_dwconv_phased(input: x.pointer, weights: w.pointer, bias: bias, output: out.pointer, geometry: g,
                              lowerBound: 0, upperBound: 6, scratch: scratch.pointer)
            let b = AlignedBuffer([bias])
            f32_conv2d_reference(input: x.pointer, weights: w.pointer, bias: b.pointer, output: ref.pointer,
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
            f32_pool2d(input: x.pointer, output: out.pointer, geometry: g, kind: kind, scratch: scratch.pointer)
            f32_pool2d_reference(input: x.pointer, output: ref.pointer, geometry: g, kind: kind)
            assertClose(out.array, ref.array, tolerance: 1e-5, "\(kind) \(g)")
        }
    }

    /// Depthwise with the full fused epilogue (residual add, ReLU6-style clamp, swish) on widths
    /// below, at and above 16 (tails, and the row-spill store of narrow planes).
    func testDepthwiseFusedEpilogueMatchesReference() {
        var rng = TestRandom(seed: 17)
        for i in 0..<40 {
            var g = randomGeometry(&rng, channels: 1)
            if i % 4 == 0 {  // MobileNet/EfficientNet shapes: 3x3 / 5x5, stride 1 or 2, "same" padding
                let k = i % 8 == 0 ? 3 : 5, s = rng.int(1...2), w = rng.int(5...40)
                g = ConvGeometry(inChannels: 1, inHeight: w, inWidth: w, kernelHeight: k, kernelWidth: k,
                                 strideH: s, strideW: s, dilationH: 1, dilationW: 1, padTop: k / 2, padLeft: k / 2,
                                 outHeight: (w + 2 * (k / 2) - k) / s + 1, outWidth: (w + 2 * (k / 2) - k) / s + 1)
            }
            let x = AlignedBuffer(rng.floats(g.inPixels)), w = AlignedBuffer(rng.floats(g.kernelHeight * g.kernelWidth))
            let res = AlignedBuffer(rng.floats(g.outPixels))
            let bias = rng.float()
            let swish = i % 2 == 0
            let out = AlignedBuffer(g.outPixels), ref = AlignedBuffer(g.outPixels)
            let scratch = AlignedBuffer(DepthwiseConv.scratchCount(g))
            f32_dwconv_phased(input: x.pointer, weights: w.pointer, bias: bias, output: out.pointer, geometry: g,
                              epilogue: GemmEpilogue(residual: res.pointer, lowerBound: -1.5, upperBound: 6, swish: swish),
                              scratch: scratch.pointer)
            let b = AlignedBuffer([bias])
            f32_conv2d_reference(input: x.pointer, weights: w.pointer, bias: b.pointer, output: ref.pointer,
                                 geometry: g, groups: 1, outChannelsPerGroup: 1)
            let expected = (0..<g.outPixels).map { j -> Float in
                let v = min(max(ref.pointer[j] + res.pointer[j], -1.5), 6)
                return swish ? v / (1 + Float(Foundation.exp(Double(-v)))) : v
            }
            assertClose(out.array, expected, tolerance: 1e-5, "\(g) swish \(swish)")
        }
    }

    /// The materialized im2col matrix (SIMD stride-2 path included) against a scalar im2col.
}
