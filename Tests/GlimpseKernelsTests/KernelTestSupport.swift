import GlimpseKernels
import GlimpseTensor
import XCTest

/// A random convolution geometry: kernel 1–5 each way, stride 1–2 × 1–3, dilation 1–2, padding below
/// the kernel size, input at most `maxHeight` × 40.
func randomConvGeometry(_ rng: inout TestRandom, channels: Int, maxHeight: Int = 30) -> ConvGeometry {
    let kh = rng.int(1...5), kw = rng.int(1...5)
    let sh = rng.int(1...2), sw = rng.int(1...3)
    let dh = rng.int(1...2), dw = rng.int(1...2)
    let ph = rng.int(0...kh - 1), pw = rng.int(0...kw - 1)
    let h = rng.int((kh - 1) * dh + 1...maxHeight), w = rng.int((kw - 1) * dw + 1...40)
    let oh = (h + 2 * ph - (kh - 1) * dh - 1) / sh + 1, ow = (w + 2 * pw - (kw - 1) * dw - 1) / sw + 1
    return ConvGeometry(inChannels: channels, inHeight: h, inWidth: w, kernelHeight: kh, kernelWidth: kw,
                        strideH: sh, strideW: sw, dilationH: dh, dilationW: dw, padTop: ph, padLeft: pw,
                        outHeight: oh, outWidth: ow)
}

/// Deterministic pseudo-random floats in [-1, 1) (SplitMix64).
struct TestRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func float() -> Float { Float(next() >> 40) / Float(1 << 24) * 2 - 1 }
    mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(next() % UInt64(range.count)) }
    mutating func floats(_ n: Int) -> [Float] { (0..<n).map { _ in float() } }
}

/// A 64-byte aligned float buffer for kernel tests.
final class AlignedBuffer {
    let count: Int
    let storage: TensorStorage
    init(_ count: Int) {
        self.count = count
        storage = TensorStorage(byteCount: max(count, 1) * 4)
    }
    convenience init(_ values: [Float]) {
        self.init(values.count)
        for (i, v) in values.enumerated() { pointer[i] = v }
    }
    var pointer: UnsafeMutablePointer<Float> { storage.bytes.assumingMemoryBound(to: Float.self) }
    var array: [Float] { Array(UnsafeBufferPointer(start: pointer, count: count)) }
}

/// Asserts max |a − b| ≤ tolerance · max(1, max |b|).
func assertClose(_ a: [Float], _ b: [Float], tolerance: Float = 1e-5, _ message: String = "",
                 file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a.count, b.count, file: file, line: line)
    var diff: Float = 0, scale: Float = 1
    for i in 0..<min(a.count, b.count) {
        // A NaN on one side only is an infinite difference (max would ignore it).
        if a[i].isNaN != b[i].isNaN { diff = .infinity }
        diff = max(diff, abs(a[i] - b[i]))
        scale = max(scale, abs(b[i]))
    }
    XCTAssertLessThanOrEqual(diff / scale, tolerance, "relative error \(diff / scale) \(message)", file: file, line: line)
}
