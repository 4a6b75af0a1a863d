/// PNG decoding through libspng: 8/16-bit, gray, palette, alpha and tRNS, composited onto white.
struct PNGDecoder {
    let width: Int
    let height: Int
    private let spng: SPNGDecoder
    private let hasAlpha: Bool

    init(_ data: UnsafeRawBufferPointer, limits: ImageLimits) throws {
        do {
            spng = try SPNGDecoder(data)
            let h = try spng.ihdr()
            width = Int(h.width)
            height = Int(h.height)
            hasAlpha = h.color_type == 4 || h.color_type == 6 || spng.hasTRNS
        } catch let e as SPNGError {
            throw ImageError(.corrupt, "truncated or corrupt PNG: \(e.message)")
        }
        if width * height > limits.maxPixels {
            throw ImageError.tooManyPixels(format: "PNG", width: width, height: height, limit: limits.maxPixels)
        }
    }

    func decode() throws -> PixelBuffer {
        let buffer = try PixelBuffer(width: width, height: height)
        do {
            try spng.decodeRGBA8(into: buffer.base, byteCount: width * height * 4)
        } catch let e as SPNGError {
            throw ImageError(.corrupt, "truncated or corrupt PNG: \(e.message)")
        }
        if hasAlpha { buffer.compositeAlphaOnWhite() }
        return buffer
    }

    /// EXIF orientation from an eXIf chunk, or from ImageMagick's "Raw profile type exif" text chunk
    /// (Pillow reads both). Call after `decode()`, since chunks after the image data count too.
    var orientation: Int {
        if let exif = spng.exif() { return EXIF.orientation(tiff: exif) }
        for t in spng.texts() where t.keyword == "Raw profile type exif" {
            return EXIF.orientation(rawProfileText: t.text)
        }
        return 1
    }
}
