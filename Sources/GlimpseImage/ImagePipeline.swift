/// Encoded bytes in, normalized tensor slot out (no base64 here).
public enum ImagePipeline {
    /// Decodes `data` (JPEG or PNG), applies EXIF orientation, fits it to the model input with
    /// `crop` (or `spec.crop`), normalizes, and writes `spec.byteCount` bytes at `destination`
    /// in `spec.layout` / `spec.dtype`.
    ///
    /// JPEGs are decoded at the smallest DCT scale that still covers the resized size (1/2, 1/4,
    /// 1/8 by default, see `DCTScaling`), so a 12 MP photo is decoded at 1/8 for a 224 input.
    /// The resize is Pillow's BILINEAR (area-aware when downscaling), bit-exact, computed only
    /// inside the crop window. Padding (fit mode, or a crop larger than the image) is 0 after
    /// normalization. Gray output converts to Pillow's "L" before resizing, as Pillow does.
    public static func preprocess(_ data: UnsafeRawBufferPointer, spec: Preprocessing, crop: CropMode? = nil,
                                  limits: ImageLimits = .init(), into destination: UnsafeMutableRawPointer) throws -> ImageInfo {
        try preprocess(data, spec: spec, crop: crop, limits: limits, options: DecodeOptions(), into: destination)
    }

    /// As above, with decoder options (DCT scaling policy).
    public static func preprocess(_ data: UnsafeRawBufferPointer, spec: Preprocessing, crop: CropMode? = nil,
                                  limits: ImageLimits = .init(), options: DecodeOptions,
                                  into destination: UnsafeMutableRawPointer) throws -> ImageInfo {
        guard data.count > 0, data.baseAddress != nil else {
            throw ImageError(.empty, "empty image: no bytes were received")
        }
        guard data.count <= limits.maxEncodedBytes else {
            throw ImageError(.tooLarge, "encoded image is \(data.count) bytes, over the limit of \(limits.maxEncodedBytes) bytes")
        }
        guard spec.width > 0, spec.height > 0 else {
            throw ImageError(.corrupt, "model input size \(spec.width)x\(spec.height) is invalid")
        }
        let mode = crop ?? spec.crop
        let normalizer = try Normalizer(spec: spec, destination: destination)
        switch ImageFormat.detect(data) {
        case .jpeg:
            let jpeg = try JPEGDecoder(data, limits: limits)
            let o = jpeg.orientation
            let swaps = o >= 5
            let (w, h) = swaps ? (jpeg.height, jpeg.width) : (jpeg.width, jpeg.height)
            let geometry = CropGeometry(sourceWidth: w, sourceHeight: h, spec: spec, mode: mode)
            let needW = min(w, geometry.resizedWidth), needH = min(h, geometry.resizedHeight)
            let decoded = try jpeg.decode(minWidth: swaps ? needH : needW, minHeight: swaps ? needW : needH,
                                           scaling: options.dctScaling)
            try render(decoded.oriented(o), geometry: geometry, normalizer: normalizer)
            return ImageInfo(format: "jpeg", width: w, height: h, orientation: o)
        case .png:
            let png = try PNGDecoder(data, limits: limits)
            let decoded = try png.decode()
            let o = png.orientation
            let (w, h) = o >= 5 ? (png.height, png.width) : (png.width, png.height)
            let geometry = CropGeometry(sourceWidth: w, sourceHeight: h, spec: spec, mode: mode)
            try render(decoded.oriented(o), geometry: geometry, normalizer: normalizer)
            return ImageInfo(format: "png", width: w, height: h, orientation: o)
        case .other(let name):
            throw ImageError.unsupported(name)
        case nil:
            throw ImageError.unrecognized(data)
        }
    }

    /// Resizes `pixels` into the crop window of `geometry` and normalizes each finished row.
    static func render(_ pixels: PixelBuffer, geometry g: CropGeometry, normalizer: Normalizer) throws {
        let validX = g.validX, validY = g.validY
        // Pillow: convert("L"), then resize. A gray file's luminance is its value ((19595 + 38470 +
        // 7471) × v + 0x8000) >> 16 = v), so it is left as it is.
        if normalizer.spec.channelOrder == .gray && !pixels.isGray { pixels.convertToLuma() }
        if validX.count != g.outputWidth || validY.count != g.outputHeight { normalizer.zeroAll() }
        try Resample.run(pixels, geometry: g) { row, y in
            normalizer.write(row: row, y: y, x0: validX.lowerBound, count: validX.count)
        }
    }
}
