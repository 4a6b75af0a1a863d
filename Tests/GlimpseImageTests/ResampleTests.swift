import XCTest
@testable import GlimpseImage

/// The SIMD resampler against a plain scalar transcription of Pillow's Resample.c.
final class ResampleTests: XCTestCase {
    /// Scalar reference: Pillow's precompute_coeffs + normalize_coeffs_8bpc + the two 8-bit passes,
    /// over the whole image (no window padding, no crop awareness).
    static func pillowResize(_ src: [UInt8], _ w: Int, _ h: Int, channels c: Int, to ow: Int, _ oh: Int) -> [UInt8] {
        func coeffs(_ inSize: Int, _ outSize: Int) -> [(Int, [Int32])] {
            let scale = Double(inSize) / Double(outSize)
            let fs = max(scale, 1), support = fs
            return (0..<outSize).map { xx in
                let center = (Double(xx) + 0.5) * scale
                let xmin = max(Int(center - support + 0.5), 0)
                let xmax = min(Int(center + support + 0.5), inSize) - xmin
                var k = (0..<xmax).map { x -> Double in
                    let t = abs((Double(x + xmin) - center + 0.5) / fs)
                    return t < 1 ? 1 - t : 0
                }
                let sum = k.reduce(0, +)
                if sum != 0 { k = k.map { $0 / sum } }
                return (xmin, k.map { Int32($0 < 0 ? $0 * 4194304 - 0.5 : $0 * 4194304 + 0.5) })
            }
        }
        func clip(_ v: Int32) -> UInt8 { v >= 1 << 30 ? 255 : v <= 0 ? 0 : UInt8(v >> 22) }
        var cur = src, cw = w, ch = h
        if ow != w {
            let k = coeffs(w, ow)
            var out = [UInt8](repeating: 0, count: ow * ch * c)
            for y in 0..<ch { for x in 0..<ow { for p in 0..<c {
                var s: Int32 = 1 << 21
                for (i, wt) in k[x].1.enumerated() { s += Int32(cur[(y * cw + k[x].0 + i) * c + p]) * wt }
                out[(y * ow + x) * c + p] = clip(s)
            } } }
            cur = out; cw = ow
        }
        if oh != h {
            let k = coeffs(h, oh)
            var out = [UInt8](repeating: 0, count: cw * oh * c)
            for y in 0..<oh { for x in 0..<cw { for p in 0..<c {
                var s: Int32 = 1 << 21
                for (i, wt) in k[y].1.enumerated() { s += Int32(cur[((k[y].0 + i) * cw + x) * c + p]) * wt }
                out[(y * cw + x) * c + p] = clip(s)
            } } }
            cur = out; ch = oh
        }
        return cur
    }

    /// Output of the pipeline as raw bytes (scale 1, mean 0, std 1, NHWC).
    func pipelineBytes(_ img: SyntheticImage, spec base: Preprocessing) throws -> [UInt8] {
        var spec = base
        spec.scale = 1
        spec.mean = [0, 0, 0]
        spec.std = [1, 1, 1]
        spec.layout = .nhwc
        return try preprocess(img.png(), spec: spec).values.map { UInt8($0) }
    }

    func noise(_ w: Int, _ h: Int, seed: UInt64) -> SyntheticImage {
        var s = seed
        return SyntheticImage(width: w, height: h) { x, y in
            s = s &* 6364136223846793005 &+ 1442695040888963407
            let n = UInt8(truncatingIfNeeded: s >> 33)
            return (UInt8(truncatingIfNeeded: x * 7 + y * 3) &+ n / 8, n, UInt8(truncatingIfNeeded: x * y))
        }
    }

    func testFillMatchesScalarReferenceAcrossSizes() throws {
        let sources = [(1, 1), (2, 3), (5, 4), (17, 9), (64, 64), (100, 37), (301, 199)]
        let outputs = [(1, 1), (3, 2), (7, 13), (16, 16), (33, 31), (64, 48), (224, 224)]
        var seed: UInt64 = 1
        for (w, h) in sources {
            let img = noise(w, h, seed: seed)
            seed += 1
            for (ow, oh) in outputs {
                let got = try pipelineBytes(img, spec: Preprocessing(width: ow, height: oh, crop: .fill))
                let want = Self.pillowResize(img.pixels, w, h, channels: 3, to: ow, oh)
                XCTAssertEqual(got, want, "\(w)x\(h) → \(ow)x\(oh)")
            }
        }
    }

    func testCenterCropMatchesReferenceResizeThenCrop() throws {
        for (w, h, short, crop) in [(500, 375, 256, 224), (375, 500, 256, 224), (640, 480, 256, 224), (301, 199, 64, 48),
                                    (260, 1000, 256, 224), (50, 30, 40, 36), (224, 224, 256, 224)] {
            let img = noise(w, h, seed: UInt64(w * h))
            let spec = Preprocessing(width: crop, height: crop, resizeShortSide: short)
            let got = try pipelineBytes(img, spec: spec)
            // The reference preprocessing: s = short / min(w, h), long side round(long × s), offset ⌊(size − crop) / 2⌋.
            let s = Double(short) / Double(min(w, h))
            let (rw, rh) = w <= h ? (short, Int((Double(h) * s).rounded(.toNearestOrEven)))
                                  : (Int((Double(w) * s).rounded(.toNearestOrEven)), short)
            let full = Self.pillowResize(img.pixels, w, h, channels: 3, to: rw, rh)
            let left = (rw - crop) / 2
            let top = (rh - crop) / 2
            var want = [UInt8]()
            for y in top..<(top + crop) { want += full[((y * rw + left) * 3)..<((y * rw + left + crop) * 3)] }
            XCTAssertEqual(got, want, "\(w)x\(h) short \(short) crop \(crop)")
        }
    }

    func testAxisWindowsStayInBounds() {
        for (inSize, outSize) in [(1, 5), (5, 1), (3, 3), (4032, 224), (10, 7), (7, 10)] {
            let axis = ResampleAxis(inSize: inSize, outSize: outSize, outputs: 0..<outSize)
            XCTAssertLessThanOrEqual(axis.taps, inSize)
            for (i, s) in axis.starts.enumerated() {
                XCTAssertGreaterThanOrEqual(s, 0)
                XCTAssertLessThanOrEqual(s + axis.taps, inSize)
                let sum = axis.weights[(i * axis.taps)..<((i + 1) * axis.taps)].reduce(0, +)
                XCTAssertEqual(Double(sum), 4194304, accuracy: Double(axis.taps))
            }
        }
    }

    func testGrayConvertsBeforeResizingLikePillow() throws {
        // Pillow: convert("L") first, then resize the single channel.
        let img = noise(97, 61, seed: 99)
        var luma = [UInt8]()
        for i in 0..<(97 * 61) {
            let r = Int(img.pixels[3 * i]), g = Int(img.pixels[3 * i + 1]), b = Int(img.pixels[3 * i + 2])
            let l: Int = (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16
            luma.append(UInt8(l))
        }
        let want = Self.pillowResize(luma, 97, 61, channels: 1, to: 40, 30)
        let spec = Preprocessing(width: 40, height: 30, crop: .fill, channelOrder: .gray, scale: 1)
        let got = try preprocess(img.png(), spec: spec).values.map { UInt8($0) }
        XCTAssertEqual(got, want)
    }
}
