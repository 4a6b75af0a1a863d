import GlimpseImage

/// The crop mode `glimpse train` uses when none is given.
public enum TrainingCrop {
    /// `fill` (the whole image stretched to the input) when most training images have fewer pixels than
    /// the base's input, as CIFAR-10's 32 × 32 photos for a 224 × 224 base: cropping the centre of an
    /// image already smaller than the input drops what little it holds (5,000 CIFAR-10 photos on
    /// mobilenetv2-12-int8: 69.67% with the base's centre crop, 71.26% with fill). Otherwise nil: the
    /// base's own mode. Reads only the images' headers.
    public static func choose(for samples: [EvalSample], input: Preprocessing) -> CropMode? {
        let inputPixels = input.width * input.height
        var small = 0, known = 0
        for sample in samples {
            let pixels: Int?
            switch sample.image {
            case .encoded(let bytes): pixels = bytes.withUnsafeBytes { ImagePipeline.declaredPixels($0) }
            case .pixels(_, let width, let height, _): pixels = width * height
            }
            guard let pixels else { continue }
            known += 1
            if pixels < inputPixels { small += 1 }
        }
        return known > 0 && small * 2 > known ? .fill : nil
    }
}
