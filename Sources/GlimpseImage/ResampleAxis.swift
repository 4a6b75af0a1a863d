/// Filter weights for one axis of Pillow's `Image.resize(..., BILINEAR)`.
///
/// Pillow (libImaging/Resample.c) uses a triangle filter whose support grows with the downscale
/// factor (so downscaling is area-aware / antialiased), normalizes the weights, and rounds them to
/// 22-bit fixed point. We do the same, for the output indices in `outputs` only (the crop window),
/// and pad every window to `taps` weights so the inner loops have a fixed trip count: the window is
/// shifted left where it would run past the input and the extra weights are zero.
struct ResampleAxis {
    static let precisionBits: Int32 = 22   // Pillow: 32 - 8 - 2
    let taps: Int
    /// First input index of each output's window.
    let starts: [Int]
    /// `taps` fixed-point weights per output.
    let weights: [Int32]

    init(inSize: Int, outSize: Int, outputs: Range<Int>) {
        precondition(inSize > 0 && outSize > 0)
        let scale = Double(inSize) / Double(outSize)
        let filterScale = max(scale, 1.0)
        let support = 1.0 * filterScale                      // bilinear support is 1
        let ksize = Int(support.rounded(.up)) * 2 + 1         // Pillow's bound on window length
        let ss = 1.0 / filterScale
        // Windows per output: Pillow's xmin / xmax rounding. The padded width is the longest
        // window actually used (often one less than ksize), which saves a multiply-add per pixel.
        var windows: [(xmin: Int, count: Int, center: Double)] = []
        windows.reserveCapacity(outputs.count)
        var longest = 1
        for xx in outputs {
            let center = (Double(xx) + 0.5) * scale
            let xmin = max(Int(center - support + 0.5), 0)   // C casts truncate toward zero
            let xmax = min(Int(center + support + 0.5), inSize) - xmin
            windows.append((xmin, max(xmax, 0), center))
            longest = max(longest, xmax)
        }
        let taps = min(max(1, min(longest, ksize)), inSize)
        var starts = [Int](repeating: 0, count: outputs.count)
        var weights = [Int32](repeating: 0, count: outputs.count * taps)
        var k = [Double](repeating: 0, count: ksize)
        for (i, win) in windows.enumerated() {
            var sum = 0.0
            for x in 0..<win.count {
                let w = ResampleAxis.triangle((Double(x + win.xmin) - win.center + 0.5) * ss)
                k[x] = w
                sum += w
            }
            let start = min(win.xmin, inSize - taps)
            starts[i] = start
            for x in 0..<win.count {
                let w = sum != 0 ? k[x] / sum : k[x]
                let fixed = w * Double(1 << ResampleAxis.precisionBits)
                weights[i * taps + (win.xmin - start) + x] = Int32(w < 0 ? fixed - 0.5 : fixed + 0.5)
            }
        }
        self.taps = taps
        self.starts = starts
        self.weights = weights
    }

    @inline(__always)
    static func triangle(_ x: Double) -> Double {
        let a = abs(x)
        return a < 1.0 ? 1.0 - a : 0.0
    }

    /// Input indices any output reads: [first, last).
    var inputRange: Range<Int> {
        guard let first = starts.min(), let last = starts.max() else { return 0..<0 }
        return first..<(last + taps)
    }
}
