import CSPNG

/// PNG decoding through libspng: 8/16-bit, gray, palette, alpha and tRNS, composited onto white.
struct PNGDecoder {
    let width: Int
    let height: Int
    /// nil for a plain file (`PNGRows.plainFile`): libspng's context is made only if `PNGRows`
    /// cannot decode it after all.
    private let spng: SPNGDecoder?
    /// A plain file's IDAT payloads.
    private let chunks: [Range<Int>]?
    private let hasAlpha: Bool
    /// 8-bit gray or RGB without transparency, of at most `packedMaxPixels`: decoded as libspng
    /// stores it (1 or 3 bytes a pixel, a row copy) and widened here, rather than widened pixel by
    /// pixel inside libspng. nil: libspng writes RGBA.
    private let packed: Packed?
    /// The file's bytes (which outlive the decoder) and whether it is interlaced, for `PNGRows`.
    private let data: UnsafeRawBufferPointer
    private let interlaced: Bool

    enum Packed {
        case gray8, rgb8
        var bytesPerPixel: Int { self == .gray8 ? 1 : 3 }
    }

    /// Above this the packed copy's extra buffer is not worth it (and the image's decode dominates).
    static let packedMaxPixels = 1 << 20

    /// `packing` false: always through libspng's RGBA (tests compare the two paths).
    init(_ data: UnsafeRawBufferPointer, limits: ImageLimits, packing: Bool = true) throws {
        self.data = data
        if packing, let plain = PNGRows.plainFile(data, maxPixels: Self.packedMaxPixels) {
            (spng, chunks) = (nil, plain.chunks)
            (width, height, interlaced, hasAlpha) = (plain.width, plain.height, false, false)
            packed = plain.channels == 1 ? .gray8 : .rgb8
        } else {
            chunks = nil
            (spng, width, height, interlaced, hasAlpha, packed) = try Self.readHeader(data, packing: packing)
        }
        if width * height > limits.maxPixels {
            throw ImageError.tooManyPixels(format: "PNG", width: width, height: height, limit: limits.maxPixels)
        }
    }

    /// The header as libspng reads it, with the chunks before the image data.
    private static func readHeader(_ data: UnsafeRawBufferPointer, packing: Bool) throws
        -> (SPNGDecoder, width: Int, height: Int, interlaced: Bool, hasAlpha: Bool, packed: Packed?) {
        do {
            let spng = try SPNGDecoder(data)
            let h = try spng.ihdr()
            let interlaced = h.interlace_method != 0
            let width = Int(h.width), height = Int(h.height)
            let hasAlpha = h.color_type == 4 || h.color_type == 6 || spng.hasTRNS
            let packed: Packed?
            switch (h.color_type, h.bit_depth, hasAlpha) {
            case (0, 8, false) where packing && width * height <= Self.packedMaxPixels: packed = .gray8
            case (2, 8, false) where packing && width * height <= Self.packedMaxPixels: packed = .rgb8
            default: packed = nil
            }
            return (spng, width, height, interlaced, hasAlpha, packed)
        } catch let e as SPNGError {
            throw Self.corrupt(e)
        }
    }

    private static func corrupt(_ e: SPNGError) -> ImageError { ImageError(.corrupt, "truncated or corrupt PNG: \(e.message)") }

    /// libspng's context: the header's, or for a plain file one made now (its own checks and errors).
    private func libspng() throws -> SPNGDecoder {
        if let spng { return spng }
        do { return try SPNGDecoder(data) } catch let e as SPNGError { throw Self.corrupt(e) }
    }

    func decode() throws -> PixelBuffer {
        let buffer = try PixelBuffer(width: width, height: height)
        do {
            if let packed {
                try decodePacked(packed, into: buffer)
            } else {
                try libspng().decodeRGBA8(into: buffer.base, byteCount: width * height * 4)
            }
        } catch let e as SPNGError {
            throw Self.corrupt(e)
        }
        if hasAlpha { buffer.compositeAlphaOnWhite() }
        return buffer
    }

    /// Decodes 1 or 3 bytes a pixel into a scratch buffer and widens them to RGBX (what
    /// `SPNG_FMT_RGBA8` gives for these images: gray repeated in R, G and B; alpha 255).
    private func decodePacked(_ packed: Packed, into buffer: PixelBuffer) throws {
        let n = width * height, k = packed.bytesPerPixel
        try withUnsafeTemporaryAllocation(byteCount: n * k, alignment: 16) { scratch in
            guard let src = scratch.baseAddress else { return }
            let s8 = src.assumingMemoryBound(to: UInt8.self)
            if !(interlaced == false && PNGRows.decode(data, width: width, height: height, channels: k, chunks: chunks, into: s8)) {
                try libspng().decode(format: packed == .gray8 ? SPNG_FMT_G8 : SPNG_FMT_RGB8, into: src, byteCount: n * k)
            }
            let s = src.assumingMemoryBound(to: UInt8.self)
            let words = UnsafeMutableRawPointer(buffer.base).bindMemory(to: UInt32.self, capacity: n)
            if packed == .gray8 {
                for i in 0..<n { words[i] = UInt32(s[i]) &* 0x0001_0101 | 0xFF00_0000 }
                buffer.isGray = true
            } else {
                for i in 0..<n {
                    let p = s + 3 * i
                    words[i] = UInt32(p[0]) | UInt32(p[1]) << 8 | UInt32(p[2]) << 16 | 0xFF00_0000
                }
            }
            _ = UnsafeMutableRawPointer(words).bindMemory(to: UInt8.self, capacity: n * 4)
        }
    }

    /// EXIF orientation from an eXIf chunk, or from ImageMagick's "Raw profile type exif" text chunk
    /// (Pillow reads both). Call after `decode()`, since chunks after the image data count too.
    var orientation: Int {
        // A plain file has no chunk but IHDR, IDAT and IEND.
        guard let spng else { return 1 }
        if let exif = spng.exif() { return EXIF.orientation(tiff: exif) }
        for t in spng.texts() where t.keyword == "Raw profile type exif" {
            return EXIF.orientation(rawProfileText: t.text)
        }
        return 1
    }
}
