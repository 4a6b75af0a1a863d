/// How far JPEGs may be downscaled in the DCT domain before the resize.
///
/// DCT scaling skips most of the IDCT and color-conversion work but low-passes differently from
/// Pillow's full decode + antialiased resize: on photos the result differs from the Pillow
/// reference by ~1–3 levels (of 255) on average. `off` is bit-exact with Pillow (no `draft()`).
public enum DCTScaling: String, Sendable, Codable, CaseIterable {
    /// Any n/8 factor (libjpeg-turbo's scaled IDCTs): fastest.
    case eighths
    /// 1/2, 1/4, 1/8 only: the same choice as Pillow's `draft()`, and bit-exact with Pillow + draft.
    case powersOfTwo
    /// Always decode at full size.
    case off
}

/// Decoder choices that trade speed against fidelity to the Pillow reference.
public struct DecodeOptions: Sendable, Hashable {
    public var dctScaling: DCTScaling
    public init(dctScaling: DCTScaling = .eighths) {
        self.dctScaling = dctScaling
    }
}
