/// JPEG decoding through TurboJPEG, with DCT-domain downscaling to the smallest size the model needs.
struct JPEGDecoder {
    let data: UnsafeRawBufferPointer
    let width: Int
    let height: Int
    let orientation: Int
    private let header: TurboJPEGDecompressor.Header
    private let tj: TurboJPEGDecompressor

    /// Reads the header only: nothing large is allocated before the pixel limit is checked.
    init(_ data: UnsafeRawBufferPointer, limits: ImageLimits) throws {
        self.data = data
        do {
            tj = try TurboJPEGDecompressor()
            header = try tj.header(data)
        } catch let e as TurboJPEGError {
            throw JPEGDecoder.imageError(e)
        }
        width = header.width
        height = header.height
        guard width > 0, height > 0 else { throw ImageError(.corrupt, "truncated or corrupt JPEG: image has no pixels") }
        if width * height > limits.maxPixels {
            throw ImageError.tooManyPixels(format: "JPEG", width: width, height: height, limit: limits.maxPixels)
        }
        orientation = EXIF.jpegOrientation(data)
    }

    /// Decodes at the smallest DCT scale whose size is at least `minWidth`×`minHeight`
    /// (in stored, not EXIF-rotated, orientation).
    func decode(minWidth: Int, minHeight: Int, scaling: DCTScaling) throws -> PixelBuffer {
        var factor = (num: 1, denom: 1)
        var best = width * height
        for f in TurboJPEGDecompressor.scalingFactors where f.num <= f.denom && scaling.allows(f) {
            let w = TurboJPEGDecompressor.scaled(width, f), h = TurboJPEGDecompressor.scaled(height, f)
            if w >= minWidth, h >= minHeight, w * h < best { best = w * h; factor = f }
        }
        let w = TurboJPEGDecompressor.scaled(width, factor), h = TurboJPEGDecompressor.scaled(height, factor)
        let buffer = try PixelBuffer(width: w, height: h)
        let warning: String?
        do {
            warning = try tj.decompress(data, into: buffer.base, width: w, height: h, cmyk: header.isCMYK)
        } catch let e as TurboJPEGError {
            throw JPEGDecoder.imageError(e)
        }
        if let warning, warning.lowercased().contains("premature end") {
            throw ImageError(.corrupt, "truncated or corrupt JPEG: \(warning)")
        }
        if header.isCMYK { convertCMYK(buffer, inverted: JPEGSegments.hasAdobeMarker(data)) }
        return buffer
    }

    /// CMYK → RGB as Pillow's `convert("RGB")` does (Adobe files store inverted CMYK).
    private func convertCMYK(_ buffer: PixelBuffer, inverted: Bool) {
        @inline(__always) func muldiv255(_ a: Int, _ b: Int) -> Int {
            let t = a * b + 128
            return ((t >> 8) + t) >> 8
        }
        var p = buffer.base
        for _ in 0..<(buffer.width * buffer.height) {
            let raw = (Int(p[0]), Int(p[1]), Int(p[2]), Int(p[3]))
            let c = inverted ? 255 - raw.0 : raw.0, m = inverted ? 255 - raw.1 : raw.1
            let y = inverted ? 255 - raw.2 : raw.2, k = inverted ? 255 - raw.3 : raw.3
            let nk = 255 - k
            p[0] = UInt8(clamping: nk - muldiv255(c, nk))
            p[1] = UInt8(clamping: nk - muldiv255(m, nk))
            p[2] = UInt8(clamping: nk - muldiv255(y, nk))
            p[3] = 255
            p += 4
        }
    }

    static func imageError(_ e: TurboJPEGError) -> ImageError {
        let m = e.message
        if m.contains("precision") {
            return ImageError(.unsupportedFormat, "unsupported JPEG variant: \(m) (only 8-bit JPEG is accepted; "
                              + "re-encode 12-bit or lossless JPEG as 8-bit JPEG or PNG)")
        }
        if m.lowercased().contains("arithmetic") {
            return ImageError(.unsupportedFormat, "unsupported JPEG variant: \(m) (re-encode as Huffman-coded JPEG or PNG)")
        }
        if m.lowercased().contains("unsupported color conversion") || m.contains("Bogus") && m.contains("color") {
            return ImageError(.unsupportedFormat, "unsupported JPEG variant: \(m)")
        }
        return ImageError(.corrupt, "truncated or corrupt JPEG: \(m)")
    }
}

extension DCTScaling {
    func allows(_ f: (num: Int, denom: Int)) -> Bool {
        switch self {
        case .eighths: return true
        case .powersOfTwo: return f.num == 1 || f.num == f.denom
        case .off: return f.num == f.denom
        }
    }
}
