import GlimpseKernels
import GlimpseTensor
import GlimpseTestSupport

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
