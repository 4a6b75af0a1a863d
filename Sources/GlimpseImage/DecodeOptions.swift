/// How far JPEGs may be downscaled in the DCT domain before the resize. In every policy the chosen
/// factor is the smallest allowed one whose decoded size still covers the resized size (short side
/// ≥ `resizeShortSide` for center crops), so the bilinear resize never upsamples a scaled decode.
///
/// DCT scaling skips most of the IDCT, upsampling and color-conversion work (not the entropy
/// decoding) but low-passes differently from Pillow's full decode + antialiased resize.
/// Measured on the shared ImageNet JPEGs against the Pillow reference preprocessing (no `draft()`),
/// mean |difference| per value: `off` 0 (bit-identical), `powersOfTwo` 0.5 / 255, `eighths` 1.6 / 255.
public enum DCTScaling: String, Sendable, Codable, CaseIterable {
    /// Any n/8 factor (libjpeg-turbo's scaled IDCTs). About 3 % faster than `powersOfTwo` on
    /// 640×480 photos (5/8 instead of a full decode), identical elsewhere.
    case eighths
    /// 1/2, 1/4, 1/8 only: the same choice as Pillow's `draft()`, and bit-identical with Pillow + draft.
    case powersOfTwo
    /// Always decode at full size: bit-identical with the Pillow reference, slowest on large images.
    case off
}

/// Decoder choices that trade speed against fidelity to the Pillow reference.
public struct DecodeOptions: Sendable, Hashable {
    public var dctScaling: DCTScaling
    public init(dctScaling: DCTScaling = .powersOfTwo) {
        self.dctScaling = dctScaling
    }
}
