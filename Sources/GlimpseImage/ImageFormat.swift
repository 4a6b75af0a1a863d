/// Container formats recognised from their leading bytes ("magic numbers").
/// Only JPEG and PNG are decoded; the others are named so that clients get a useful error.
enum ImageFormat: Equatable {
    case jpeg, png
    case other(String)

    static let accepted = "JPEG, PNG"

    /// Sniffs the format from the first bytes. Returns nil when nothing is recognised.
    static func detect(_ data: UnsafeRawBufferPointer) -> ImageFormat? {
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            guard data.count >= offset + magic.count else { return false }
            for (i, b) in magic.enumerated() where data[offset + i] != b { return false }
            return true
        }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(Array("BM".utf8)) { return .other("BMP") }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .other("GIF") }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .other("WebP") }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return .other("TIFF") }
        if starts(Array("ftyp".utf8), at: 4) {
            if starts(Array("avif".utf8), at: 8) || starts(Array("avis".utf8), at: 8) { return .other("AVIF") }
            if starts(Array("heic".utf8), at: 8) || starts(Array("heix".utf8), at: 8) || starts(Array("mif1".utf8), at: 8) {
                return .other("HEIF")
            }
            if starts(Array("jp2 ".utf8), at: 8) { return .other("JPEG 2000") }
        }
        if starts([0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50, 0x20, 0x20]) { return .other("JPEG 2000") }
        if starts([0xFF, 0x0A]) || starts([0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20]) { return .other("JPEG XL") }
        if starts([0x00, 0x00, 0x01, 0x00]) { return .other("ICO") }
        if starts(Array("8BPS".utf8)) { return .other("PSD") }
        if starts(Array("qoif".utf8)) { return .other("QOI") }
        if starts(Array("%PDF".utf8)) { return .other("PDF") }
        if starts([0xFF, 0xD8]) { return .jpeg }  // JPEG SOI followed by junk: let the decoder explain.
        return nil
    }
}

extension ImageError {
    static func unsupported(_ name: String) -> ImageError {
        ImageError(.unsupportedFormat, "unsupported image format (\(name)); accepted: \(ImageFormat.accepted)")
    }

    static func unrecognized(_ data: UnsafeRawBufferPointer) -> ImageError {
        let head = data.prefix(8).map { b -> String in
            let s = String(b, radix: 16, uppercase: true)
            return s.count == 1 ? "0" + s : s
        }.joined(separator: " ")
        return ImageError(.unsupportedFormat,
                          "unsupported image format (unrecognized data starting with bytes \(head)); accepted: \(ImageFormat.accepted)")
    }

    static func tooManyPixels(format: String, width: Int, height: Int, limit: Int) -> ImageError {
        let pixels = Double(width) * Double(height)
        return ImageError(.tooLarge, "\(format) image is \(width)x\(height) = \(scientific(pixels)) pixels, "
                          + "over the limit of \(scientific(Double(limit))) pixels")
    }
}

/// Formats e.g. 3.6e9 without Foundation.
func scientific(_ value: Double) -> String {
    guard value.isFinite, value > 0 else { return "\(value)" }
    var exponent = 0
    var m = value
    while m >= 10 { m /= 10; exponent += 1 }
    while m < 1 { m *= 10; exponent -= 1 }
    var tenths = Int((m * 10).rounded())
    if tenths >= 100 { tenths /= 10; exponent += 1 }
    return "\(tenths / 10).\(tenths % 10)e\(exponent)"
}

extension ImagePipeline {
    /// The pixel count the image's header declares (PNG IHDR; JPEG SOF0, SOF1 or SOF2), read without
    /// decoding anything; nil when the header is not found; `Int.max` when it passes `Int`. A cheap
    /// bound on what decoding would cost, for callers that choose where to decode.
    public static func declaredPixels(_ data: UnsafeRawBufferPointer) -> Int? {
        switch ImageFormat.detect(data) {
        case .png:
            guard data.count >= 24, data[12] == UInt8(ascii: "I"), data[13] == UInt8(ascii: "H"),
                  data[14] == UInt8(ascii: "D"), data[15] == UInt8(ascii: "R") else { return nil }
            // Each side is 32 bits: their product can pass Int's range (then it is simply too many).
            let (pixels, overflow) = data.bigEndian(at: 16, count: 4).multipliedReportingOverflow(by: data.bigEndian(at: 20, count: 4))
            return overflow ? .max : pixels
        case .jpeg:
            for marker: UInt8 in [0xC0, 0xC1, 0xC2] {
                if let sof = JPEGSegments.firstPayload(in: data, marker: marker, startingWith: []), sof.count >= 5 {
                    return sof.bigEndian(at: 1, count: 2) * sof.bigEndian(at: 3, count: 2)
                }
            }
            return nil
        default:
            return nil
        }
    }
}

extension UnsafeRawBufferPointer {
    /// The unsigned big-endian integer of `count` (at most 7) bytes at `offset`, which the caller
    /// has checked lie inside.
    @inline(__always)
    func bigEndian(at offset: Int, count: Int) -> Int {
        var value = 0
        for i in 0..<count { value = value << 8 | Int(self[offset + i]) }
        return value
    }
}
