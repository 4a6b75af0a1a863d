import Foundation
import GlimpseKernels
import GlimpseTestSupport
import XCTest

/// The int8 kernels (u8 × s8 GEMM convolution, depthwise, GEMV, elementwise) against their scalar
/// references, bit for bit, over random geometries with tails, zero points 0 and non-zero, and
/// per-tensor and per-channel scales.
final class Int8KernelTests: XCTestCase {
    /// 64-byte aligned bytes.
    final class Bytes {
        let count: Int
        let pointer: UnsafeMutableRawPointer
        init(_ count: Int) {
            self.count = count
            pointer = .allocate(byteCount: max(count, 1) + 64, alignment: 64)
            pointer.initializeMemory(as: UInt8.self, repeating: 0, count: max(count, 1) + 64)
        }
        deinit { pointer.deallocate() }
        var u8: UnsafeMutablePointer<UInt8> { pointer.assumingMemoryBound(to: UInt8.self) }
        var s8: UnsafeMutablePointer<Int8> { pointer.assumingMemoryBound(to: Int8.self) }
        var f32: UnsafeMutablePointer<Float> { pointer.assumingMemoryBound(to: Float.self) }
        var bytes: [UInt8] { Array(UnsafeBufferPointer(start: u8, count: count)) }
    }

    func randomU8(_ rng: inout TestRandom, _ n: Int) -> Bytes {
        let b = Bytes(n)
        for i in 0..<n { b.u8[i] = UInt8(truncatingIfNeeded: rng.next()) }
        return b
    }

    func randomS8(_ rng: inout TestRandom, _ n: Int) -> Bytes {
        let b = Bytes(n)
        for i in 0..<n { b.s8[i] = Int8(truncatingIfNeeded: rng.next()) }
        return b
    }

    /// Per-tensor (one value repeated) or per-channel scales that spread the outputs over the u8 range.
    func requantization(_ rng: inout TestRandom, channels: Int, k: Int, perChannel: Bool) -> Requantization {
        let base = 1 / (Float(max(k, 1)).squareRoot() * 300)
        let scales = perChannel ? (0..<channels).map { _ in base * (0.25 + abs(rng.float()) * 2) } : [Float](repeating: base, count: channels)
        let bias = (0..<channels).map { _ in Int32(rng.int(-20000...20000)) }
        let zeroPoint = Int32(rng.int(0...255))
        let (lower, upper) = Self.fusedClip(&rng, zeroPoint: zeroPoint)
        return Requantization(bias: bias, scale: scales, zeroPoint: zeroPoint, lower: lower, upper: upper)
    }

    /// The output range: in a third of the cases a fused clip (ReLU at the zero point, with an upper
    /// bound as ReLU6 gives), which the packed stores apply partly as a byte maximum.
    static func fusedClip(_ rng: inout TestRandom, zeroPoint: Int32) -> (Int32, Int32) {
        guard rng.int(0...2) == 0 else { return (0, 255) }
        return (zeroPoint, min(255, zeroPoint + Int32(rng.int(10...120))))
    }

    func randomGeometry(_ rng: inout TestRandom, channels: Int, pointwise: Bool) -> ConvGeometry {
        if pointwise {
            let h = rng.int(1...13), w = rng.int(1...17)
            return ConvGeometry(inChannels: channels, inHeight: h, inWidth: w, kernelHeight: 1, kernelWidth: 1, strideH: 1, strideW: 1,
                                dilationH: 1, dilationW: 1, padTop: 0, padLeft: 0, outHeight: h, outWidth: w)
        }
        return randomConvGeometry(&rng, channels: channels, maxHeight: 24)
    }

    func testDpbusdMatchesReference() {
        var rng = TestRandom(seed: 11)
        for _ in 0..<200 {
            var acc = SIMD16<Int32>(), u = SIMD16<Int32>(), s = SIMD16<Int32>()
            for j in 0..<16 {
                acc[j] = Int32(truncatingIfNeeded: rng.next() % 100_000) - 50_000
                u[j] = Int32(truncatingIfNeeded: rng.next())
                s[j] = Int32(truncatingIfNeeded: rng.next())
            }
            let r = dpbusd(acc, u, s)
            for j in 0..<16 {
                XCTAssertEqual(r[j], dpbusdReference(acc[j], UInt32(bitPattern: u[j]), UInt32(bitPattern: s[j])))
            }
        }
    }

    func testConvGemmMatchesReference() {
        var rng = TestRandom(seed: 5)
        for trial in 0..<60 {
            let pointwise = trial % 2 == 0
            let cin = rng.int(1...(pointwise ? 70 : 9)), cout = rng.int(1...40)
            let g = randomGeometry(&rng, channels: cin, pointwise: pointwise)
            checkConv(&rng, g, cout: cout, trial: trial)
        }
    }

    /// Stride 1 or 2 and dilation 1 along rows: the vector im2col (VNNI builds), over rows shorter and
    /// longer than a tile, windows reaching past every edge, and channel counts that leave k-group tails.
    func testRowRunIm2colMatchesReference() {
        var rng = TestRandom(seed: 29)
        for trial in 0..<80 {
            let kh = rng.int(1...5), kw = rng.int(trial % 4 == 0 ? 2...5 : 1...3)
            let ph = rng.int(0...kh - 1), pw = rng.int(0...kw - 1), sh = rng.int(1...2), dh = rng.int(1...2)
            let sw = trial % 2 == 0 ? 1 : 2
            let h = rng.int((kh - 1) * dh + 1...14), w = rng.int(kw...(trial % 3 == 0 ? 70 : 12))
            let cin = rng.int(1...7), cout = rng.int(1...20)
            let g = ConvGeometry(inChannels: cin, inHeight: h, inWidth: w, kernelHeight: kh, kernelWidth: kw,
                                 strideH: sh, strideW: sw, dilationH: dh, dilationW: 1, padTop: ph, padLeft: pw,
                                 outHeight: (h + 2 * ph - (kh - 1) * dh - 1) / sh + 1, outWidth: (w + 2 * pw - kw) / sw + 1)
            guard !g.isPointwise else { continue }
            checkConv(&rng, g, cout: cout, trial: trial)
        }
    }

    /// The operator's packing: weights once, the zero-point correction folded into the bias.
    func packGemm(_ w: Bytes, cout: Int, k: Int, requant r: Requantization, inputZeroPoint zx: UInt8) -> (Bytes, RequantStorage) {
        let packed = Bytes(QS8Gemm.packedACount(m: cout, k: k))
        QS8Gemm.packA(w.s8, m: cout, k: k, into: packed.s8)
        var folded = r
        let sums = QS8Gemm.rowSums(w.s8, m: cout, k: k)
        for c in 0..<cout { folded.bias[c] = folded.bias[c] &- Int32(zx) &* sums[c] }
        return (packed, RequantStorage(folded))
    }

    /// One convolution through `QS8Conv`'s tiles against `QS8ConvReference`, bit for bit.
    /// Every kernel variant this CPU runs (the narrow and the wide layouts alike).
    func checkConv(_ rng: inout TestRandom, _ g: ConvGeometry, cout: Int, trial: Int, file: StaticString = #filePath, line: UInt = #line) {
        let state = rng
        for isa in KernelDispatch.available {
            rng = state
            KernelDispatch.withISA(isa) {
                checkConvOnce(&rng, g, cout: cout, trial: trial, label: "\(isa)", file: file, line: line)
            }
        }
    }

    func checkConvOnce(_ rng: inout TestRandom, _ g: ConvGeometry, cout: Int, trial: Int, label: String, file: StaticString, line: UInt) {
        let cin = g.inChannels
        let zx = trial % 3 == 0 ? UInt8(0) : UInt8(rng.int(0...255))
        let k = g.patchSize
        let x = randomU8(&rng, cin * g.inPixels), w = randomS8(&rng, cout * k)
        let r = requantization(&rng, channels: cout, k: k, perChannel: trial % 4 < 2)
        let ref = Bytes(cout * g.outPixels), out = Bytes(cout * g.outPixels)
        QS8ConvReference.conv(x: x.u8, inputZeroPoint: zx, w: w.s8, group: 1, geometry: g, outChannels: cout,
                              requant: r, y: ref.u8)
        let (packed, storage) = packGemm(w, cout: cout, k: k, requant: r, inputZeroPoint: zx)
        let conv = QS8Conv(geometry: g, outChannels: cout, inputZeroPoint: zx)
        let panel = Bytes(conv.panelBytes)
        for t in 0..<conv.tilesPerImage {
            conv.runTile(t, x: x.u8, y: out.u8, packedA: packed.s8, requant: storage.pointers, panel: panel.u8)
        }
        XCTAssertEqual(out.bytes, ref.bytes, "\(label) trial \(trial): \(g), cout \(cout), zx \(zx)", file: file, line: line)
        // The outputs are not all clamped: the test would prove little otherwise (a fused clip may
        // clamp a small output whole).
        if r.lower == 0 && r.upper == 255 {
            XCTAssertGreaterThan(Set(ref.bytes).count, min(8, ref.count / 4), "trial \(trial)", file: file, line: line)
        }
    }

    /// Pointwise convolutions over a batch as one GEMM (`runBatchTile`: tiles that cross image
    /// boundaries), run in parts of the output channels, against the reference.
    func testBatchTilesAndChannelPartsMatchReference() {
        var rng = TestRandom(seed: 41)
        for trial in 0..<40 {
            let batch = rng.int(1...5), cin = rng.int(1...70), cout = rng.int(1...40)
            let g = randomGeometry(&rng, channels: cin, pointwise: true)
            let zx = trial % 3 == 0 ? UInt8(0) : UInt8(rng.int(0...255))
            let k = g.patchSize, inImage = cin * g.inPixels, outImage = cout * g.outPixels
            let x = randomU8(&rng, batch * inImage), w = randomS8(&rng, cout * k)
            let r = requantization(&rng, channels: cout, k: k, perChannel: trial % 2 == 0)
            let ref = Bytes(batch * outImage), out = Bytes(batch * outImage)
            for n in 0..<batch {
                QS8ConvReference.conv(x: x.u8 + n * inImage, inputZeroPoint: zx, w: w.s8, group: 1, geometry: g, outChannels: cout,
                                      requant: r, y: ref.u8 + n * outImage)
            }
            // Parts of whole 8-row blocks, the last one possibly short or empty.
            let step = rng.int(1...3) * QS8Gemm.mr
            for isa in KernelDispatch.available {
                KernelDispatch.withISA(isa) {
                    out.u8.update(repeating: 0, count: out.count)
                    let (packed, storage) = packGemm(w, cout: cout, k: k, requant: r, inputZeroPoint: zx)
                    let conv = QS8Conv(geometry: g, outChannels: cout, inputZeroPoint: zx)
                    let scratch = Bytes(conv.batchScratchBytes)
                    for part in stride(from: 0, to: cout, by: step) {
                        let rows = part..<min(cout, part + step)
                        for t in 0..<conv.batchTiles(batch: batch) {
                            conv.runBatchTile(t, batch: batch, rows: rows, x: x.u8, y: out.u8, packedA: packed.s8, requant: storage.pointers,
                                              scratch: scratch.u8)
                        }
                    }
                    XCTAssertEqual(out.bytes, ref.bytes, "\(isa) trial \(trial): batch \(batch), \(g), cout \(cout), parts of \(step)")
                }
            }
        }
    }

    func testDepthwiseMatchesReference() {
        var rng = TestRandom(seed: 7)
        for trial in 0..<40 {
            let channels = rng.int(1...7)
            var g = randomGeometry(&rng, channels: 1, pointwise: false)
            while g.strideW > 2 { g = randomGeometry(&rng, channels: 1, pointwise: false) }
            if trial % 3 == 0 {   // MobileNet's 3×3, stride 1 or 2, padding 1
                let s = rng.int(1...2), h = rng.int(2...30), w = rng.int(2...75)
                g = ConvGeometry(inChannels: 1, inHeight: h, inWidth: w, kernelHeight: 3, kernelWidth: 3, strideH: s, strideW: s,
                                 dilationH: 1, dilationW: 1, padTop: 1, padLeft: 1,
                                 outHeight: (h + 2 - 3) / s + 1, outWidth: (w + 2 - 3) / s + 1)
            }
            let zx = trial % 4 == 0 ? UInt8(0) : UInt8(rng.int(0...255))
            let taps = g.kernelHeight * g.kernelWidth
            let x = randomU8(&rng, channels * g.inPixels), w = randomS8(&rng, channels * taps)
            let r = requantization(&rng, channels: channels, k: taps, perChannel: trial % 2 == 0)
            let ref = Bytes(channels * g.outPixels), out = Bytes(channels * g.outPixels)
            QS8ConvReference.conv(x: x.u8, inputZeroPoint: zx, w: w.s8, group: channels, geometry: g, outChannels: channels,
                                  requant: r, y: ref.u8)
            let dw = QU8Depthwise(geometry: g, inputZeroPoint: zx)
            let wf = Bytes(channels * taps * 4), scratch = Bytes(dw.scratchFloats * 4)
            for i in 0..<channels * taps { wf.f32[i] = Float(w.s8[i]) }
            let storage = RequantStorage(r)
            if trial % 2 == 0 {
                for c in 0..<channels {
                    dw.runChannel(c, x: x.u8 + c * g.inPixels, w: wf.f32 + c * taps, y: out.u8 + c * g.outPixels,
                                  requant: storage.pointers, scratch: scratch.f32)
                }
            } else {
                dw.runChannels(0..<channels, x: x.u8, w: wf.f32, y: out.u8, requant: storage.pointers, scratch: scratch.f32)
            }
            XCTAssertEqual(out.bytes, ref.bytes, "trial \(trial): \(g), zx \(zx)")
        }
    }

    func testGemvMatchesReference() {
        var rng = TestRandom(seed: 9)
        for trial in 0..<30 {
            let k = rng.int(1...300), n = rng.int(1...150), rows = rng.int(1...4)
            let zx = trial % 3 == 0 ? UInt8(0) : UInt8(rng.int(0...255))
            let x = randomU8(&rng, rows * k), w = randomS8(&rng, k * n)
            let r = requantization(&rng, channels: n, k: k, perChannel: trial % 2 == 0)
            let gemv = QS8Gemv(k: k, n: n)
            let packed = Bytes(gemv.packedCount)
            gemv.pack(w.s8, into: packed.s8)
            let sums = gemv.columnSums(w.s8)
            let padded = gemv.blocks * 16
            var bias = [Int32](repeating: 0, count: padded), scale = [Float](repeating: 0, count: padded)
            for j in 0..<n { bias[j] = r.bias[j] &- Int32(zx) &* sums[j]; scale[j] = r.scale[j] }
            let storage = RequantStorage(Requantization(bias: bias, scale: scale, zeroPoint: r.zeroPoint, lower: r.lower, upper: r.upper))
            let out = Bytes(rows * n), scratch = Bytes(gemv.rowBytes)
            var ref = [UInt8](repeating: 0, count: rows * n)
            for row in 0..<rows {
                if row % 2 == 0 {
                    gemv.runRow(x: x.u8 + row * k, packed: packed.s8, requant: storage.pointers, y: out.u8 + row * n, padded: scratch.u8)
                } else {
                    // In parts of a few column blocks (as one image's row is split over threads).
                    let span = rng.int(1...5)
                    for start in stride(from: 0, to: gemv.blocks, by: span) {
                        gemv.runRow(x: x.u8 + row * k, packed: packed.s8, requant: storage.pointers, y: out.u8 + row * n,
                                    padded: scratch.u8, blocks: start..<start + span)
                    }
                }
                for j in 0..<n {
                    var acc: Int32 = 0
                    for i in 0..<k { acc &+= (Int32(x.u8[row * k + i]) - Int32(zx)) * Int32(w.s8[i * n + j]) }
                    ref[row * n + j] = r.requantize(acc, channel: j)
                }
            }
            XCTAssertEqual(out.bytes, ref, "trial \(trial): k \(k), n \(n)")
        }
    }

    func testElementwiseMatchReference() {
        var rng = TestRandom(seed: 13)
        for trial in 0..<20 {
            let n = rng.int(1...200)
            let a = randomU8(&rng, n), b = randomU8(&rng, n), y = Bytes(n)
            let add = QU8Add(ra: 0.3 + abs(rng.float()), za: trial % 2 == 0 ? 0 : Int32(rng.int(0...255)),
                             rb: 0.3 + abs(rng.float()), zb: Int32(rng.int(0...255)), zy: Int32(rng.int(0...255)))
            add.run(a.u8, b.u8, y.u8, count: n)
            XCTAssertEqual(y.bytes, (0..<n).map { add.reference(a.u8[$0], b.u8[$0]) }, "add, trial \(trial)")

            let pool = QU8GlobalAveragePool(zx: Int32(rng.int(0...255)), zy: Int32(rng.int(0...255)), scale: (0.5 + abs(rng.float())) / Float(n))
            XCTAssertEqual(pool.run(a.u8, count: n), pool.reference(a.u8, count: n), "pool, trial \(trial)")

            let f = Bytes(4 * n)
            for i in 0..<n { f.f32[i] = rng.float() * 4 }
            let scale = 0.01 + abs(rng.float()) * 0.05, zp = Int32(rng.int(0...255))
            qu8_quantize_f32(f.f32, y.u8, count: n, scale: scale, zeroPoint: zp)
            XCTAssertEqual(y.bytes, (0..<n).map { qu8QuantizeReference(f.f32[$0], scale: scale, zeroPoint: zp) }, "quantize, trial \(trial)")

            // Centered floats (q − zp, the fp32 fallback's form) to uint8 and back, clamped to the range.
            for i in 0..<n { f.f32[i] = Float(rng.int(-300...300)) }
            qu8_from_centered_f32(f.f32, y.u8, count: n, zeroPoint: zp)
            XCTAssertEqual(y.bytes, (0..<n).map { UInt8(min(max(Int32(f.f32[$0]) + zp, 0), 255)) }, "to uint8, trial \(trial)")
            let back = Bytes(4 * n)
            qu8_to_centered_f32(y.u8, back.f32, count: n, zeroPoint: zp)
            for i in 0..<n { XCTAssertEqual(back.f32[i], Float(Int32(y.u8[i]) - zp), "to centered, trial \(trial)") }
        }
    }
}
