import GlimpseKernels
import GlimpseTestSupport
import XCTest

/// The integer depthwise kernel (`QU8DepthwiseVNNI`) against the scalar reference, bit for bit.
final class Int8DepthwiseKernelTests: XCTestCase {
    typealias Bytes = Int8KernelTests.Bytes

    /// MobileNet's 3×3 windows (stride 1 and 2, padding 1) on planes from 1×1 to wider than 64 (narrow
    /// ones copied 64 padded bytes at a time, runs of four full tiles stored packed), and
    /// random windows (1...5 and up to 9 wide, strides 1...3, dilation, asymmetric padding).
    func geometry(_ rng: inout TestRandom, trial: Int) -> ConvGeometry {
        switch trial % 3 {
        case 0:
            let s = rng.int(1...2), h = rng.int(1...30), w = trial % 2 == 0 ? rng.int(1...15) : rng.int(16...90)
            return ConvGeometry(inChannels: 1, inHeight: h, inWidth: w, kernelHeight: 3, kernelWidth: 3, strideH: s, strideW: s,
                                dilationH: 1, dilationW: 1, padTop: 1, padLeft: 1,
                                outHeight: (h + 2 - 3) / s + 1, outWidth: (w + 2 - 3) / s + 1)
        case 1:
            let kh = rng.int(1...3), kw = rng.int(5...9), s = rng.int(1...2)
            let h = rng.int(kh...12), w = rng.int(kw...40), pw = rng.int(0...kw / 2)
            return ConvGeometry(inChannels: 1, inHeight: h, inWidth: w, kernelHeight: kh, kernelWidth: kw, strideH: s, strideW: s,
                                dilationH: 1, dilationW: 1, padTop: 0, padLeft: pw,
                                outHeight: (h - kh) / s + 1, outWidth: (w + 2 * pw - kw) / s + 1)
        default:
            return randomConvGeometry(&rng, channels: 1, maxHeight: 24)
        }
    }

    func testIntegerDepthwiseMatchesReference() throws {
#if !GLIMPSE_VNNI
        throw XCTSkip("the integer depthwise kernel needs a VNNI build")
#else
        var rng = TestRandom(seed: 31)
        var outputs = Set<UInt8>()
        for trial in 0..<120 {
            let g = geometry(&rng, trial: trial)
            let channels = rng.int(1...6)
            let zx = trial % 4 == 0 ? UInt8(0) : UInt8(rng.int(0...255))
            let taps = g.kernelHeight * g.kernelWidth
            let x = Bytes(channels * g.inPixels), w = Bytes(channels * taps)
            for i in 0..<x.count { x.u8[i] = UInt8(truncatingIfNeeded: rng.next()) }
            for i in 0..<w.count { w.s8[i] = Int8(truncatingIfNeeded: rng.next()) }
            let base = 1 / (Float(taps).squareRoot() * 300)
            let scales = trial % 2 == 0 ? (0..<channels).map { _ in base * (0.25 + abs(rng.float()) * 2) }
                                        : [Float](repeating: base, count: channels)
            let zeroPoint = trial % 5 == 0 ? 0 : Int32(rng.int(0...255))
            let (lower, upper) = Int8KernelTests.fusedClip(&rng, zeroPoint: zeroPoint)
            let r = Requantization(bias: (0..<channels).map { _ in Int32(rng.int(-20000...20000)) }, scale: scales,
                                   zeroPoint: zeroPoint, lower: lower, upper: upper)
            let ref = Bytes(channels * g.outPixels), out = Bytes(channels * g.outPixels)
            QS8ConvReference.conv(x: x.u8, inputZeroPoint: zx, w: w.s8, group: channels, geometry: g, outChannels: channels,
                                  requant: r, y: ref.u8)
            guard let dw = QU8DepthwiseVNNI(geometry: g, inputZeroPoint: zx) else {
                XCTFail("trial \(trial): \(g) not supported")
                continue
            }
            // The operator's folding: raw u8 sums, so the bias loses zx·Σw.
            var folded = r
            for c in 0..<channels {
                var sum: Int32 = 0
                for i in 0..<taps { sum += Int32(w.s8[c * taps + i]) }
                folded.bias[c] = folded.bias[c] &- Int32(zx) &* sum
            }
            let storage = RequantStorage(folded)
            let words = QU8DepthwiseVNNI.packWeights(w.s8, channels: channels, kernelHeight: g.kernelHeight, kernelWidth: g.kernelWidth)
            let scratch = Bytes(dw.scratchBytes)
            // Scratch left dirty by another geometry must not matter.
            for i in 0..<scratch.count { scratch.u8[i] = UInt8(truncatingIfNeeded: i &* 37) }
            words.withUnsafeBufferPointer { wb in
                dw.runChannels(0..<channels, x: x.u8, w: wb.baseAddress!, y: out.u8, requant: storage.pointers, scratch: scratch.u8)
            }
            XCTAssertEqual(out.bytes, ref.bytes, "trial \(trial): \(g), zx \(zx)")
            outputs.formUnion(ref.bytes)
        }
        // The outputs span the range rather than sitting at a clamp.
        XCTAssertGreaterThan(outputs.count, 200)
#endif
    }
}
