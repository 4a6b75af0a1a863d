import GlimpseTestSupport
import XCTest
@testable import GlimpseImage

/// 8-bit gray and RGB PNGs without transparency are decoded as libspng stores them and widened to
/// RGBX in Swift; every byte must equal libspng's own RGBA path.
final class PNGPackedTests: XCTestCase {
    private func bothPaths(_ data: Data) throws -> (packed: [UInt8], rgba: [UInt8]) {
        try data.withUnsafeBytes { raw in
            let a = try PNGDecoder(raw, limits: .init()).decode()
            let b = try PNGDecoder(raw, limits: .init(), packing: false).decode()
            XCTAssertEqual(a.width, b.width)
            XCTAssertEqual(a.height, b.height)
            let n = a.width * a.height * 4
            return (Array(UnsafeBufferPointer(start: a.base, count: n)), Array(UnsafeBufferPointer(start: b.base, count: n)))
        }
    }

    func testGrayAndRGBMatchLibspngRGBA() throws {
        var rng = SystemRandomNumberGenerator()
        for (w, h) in [(1, 1), (28, 28), (37, 5), (64, 48)] {
            for color in [PNGWriter.Color.gray, .rgb] {
                let channels = color == .gray ? 1 : 3
                let pixels = (0..<(w * h * channels)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let (packed, rgba) = try bothPaths(PNGWriter.encode(width: w, height: h, color: color, pixels: pixels))
                XCTAssertEqual(packed, rgba, "\(color) \(w)x\(h)")
                // And the values themselves: gray in R, G and B, opaque.
                for i in [0, w * h - 1] {
                    let src = pixels[(i * channels)..<((i + 1) * channels)].map { $0 }
                    let expect = channels == 1 ? [src[0], src[0], src[0], 255] : src + [255]
                    XCTAssertEqual(Array(packed[(4 * i)..<(4 * i + 4)]), expect)
                }
            }
        }
    }

    /// A gray file's luminance is its value, so gray models skip the conversion for it (`isGray`):
    /// the same pixels as an RGB file with R = G = B, which is converted, give the same tensor,
    /// resized or not.
    func testGrayFilesSkipTheLumaConversionWithTheSameResult() throws {
        var rng = SystemRandomNumberGenerator()
        let (w, h) = (28, 28)
        let pixels = (0..<(w * h)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let gray = PNGWriter.encode(width: w, height: h, color: .gray, pixels: pixels)
        let rgb = PNGWriter.encode(width: w, height: h, color: .rgb, pixels: pixels.flatMap { [$0, $0, $0] })
        XCTAssertTrue(try gray.withUnsafeBytes { try PNGDecoder($0, limits: .init()).decode().isGray })
        XCTAssertFalse(try rgb.withUnsafeBytes { try PNGDecoder($0, limits: .init()).decode().isGray })
        for size in [28, 20, 40] {
            let spec = Preprocessing(width: size, height: size, crop: .fill, channelOrder: .gray, layout: .nchw,
                                     scale: 1 / 255, mean: [0.1307], std: [0.3081])
            XCTAssertEqual(try preprocess(gray, spec: spec).values, try preprocess(rgb, spec: spec).values, "\(size)")
        }
    }

    func testSharedDigitsMatchLibspngRGBA() throws {
        for name in ["digits/torchserve_3.png", "digits/winml_8.png", "formats/pillow_hopper.png", "imagenet/kitten_224.png", "imagenet/fish.png"] {
            let (packed, rgba) = try bothPaths(try SharedData.data("images/" + name))
            XCTAssertEqual(packed, rgba, name)
        }
    }

    /// Decodes with `PNGRows` alone: nil when it leaves the file to libspng.
    private func rows(_ data: Data, width: Int, height: Int, channels: Int) -> [UInt8]? {
        data.withUnsafeBytes { raw in
            var out = [UInt8](repeating: 0, count: width * height * channels)
            let read = out.withUnsafeMutableBufferPointer { PNGRows.decode(raw, width: width, height: height, channels: channels, into: $0.baseAddress!) }
            return read ? out : nil
        }
    }

    func testEveryFilterAndSplitImageDataAreReadInOneCall() throws {
        var rng = SystemRandomNumberGenerator()
        for (w, h) in [(1, 1), (28, 28), (37, 11), (85, 6), (256, 5)] {
            for color in [PNGWriter.Color.gray, .rgb] where w * (color == .gray ? 1 : 3) <= PNGRows.maxRowBytes {
                let channels = color == .gray ? 1 : 3
                let pixels = (0..<(w * h * channels)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                for idat in [nil, 7, 1] as [Int?] {
                    let png = PNGWriter.encode(width: w, height: h, color: color, pixels: pixels, filtered: true, idatBytes: idat)
                    XCTAssertEqual(rows(png, width: w, height: h, channels: channels), pixels, "\(color) \(w)x\(h), IDAT of \(idat ?? 0)")
                    let (packed, rgba) = try bothPaths(png)
                    XCTAssertEqual(packed, rgba, "\(color) \(w)x\(h), IDAT of \(idat ?? 0)")
                }
            }
        }
    }

    func testTheSharedDigitsAreReadInOneCall() throws {
        for name in ["digits/torchserve_3.png", "digits/winml_8.png"] {
            let data = try SharedData.data("images/" + name)
            let decoded = try data.withUnsafeBytes { try PNGDecoder($0, limits: .init(), packing: false).decode() }
            let read = try XCTUnwrap(rows(data, width: decoded.width, height: decoded.height, channels: 1), name)
            let expect = (0..<(decoded.width * decoded.height)).map { decoded.base[4 * $0] }
            XCTAssertEqual(read, expect, name)
        }
    }

    /// What is not in the plain shape is left to libspng, which still decodes it (or refuses it).
    func testOtherShapesAreLeftToLibspng() throws {
        let pixels = (0..<(28 * 28)).map { UInt8($0 % 251) }
        let png = PNGWriter.encode(width: 28, height: 28, color: .gray, pixels: pixels, filtered: true)
        XCTAssertNotNil(rows(png, width: 28, height: 28, channels: 1))
        var trailing = png
        trailing.append(contentsOf: [0, 0, 0, 0])
        var badCRC = png
        badCRC[badCRC.count - 13] ^= 0x01   // the last IDAT's CRC
        let after = PNGWriter.encode(width: 28, height: 28, color: .gray, pixels: pixels,
                                     exif: PNGWriter.exifOrientation(1), exifAfterData: true)
        let wide = PNGWriter.encode(width: 86, height: 2, color: .rgb, pixels: [UInt8](repeating: 9, count: 86 * 2 * 3))
        for (name, data, w, h, c) in [("bytes after IEND", trailing, 28, 28, 1), ("a bad CRC", badCRC, 28, 28, 1),
                                      ("a chunk after the image data", after, 28, 28, 1), ("a wide row", wide, 86, 2, 3)] {
            XCTAssertNil(rows(data, width: w, height: h, channels: c), name)
        }
        // libspng's own verdict, whichever it is (it does not check the last IDAT's CRC here).
        for data in [trailing, badCRC, after, wide] {
            let (packed, rgba) = try bothPaths(data)
            XCTAssertEqual(packed, rgba)
        }
    }

    /// A plain file (signature, IHDR, IDAT chunks, IEND, nothing else) is read without libspng's
    /// context; anything else, including an IHDR with a bad CRC or an ancillary chunk anywhere, is
    /// not, and keeps libspng's answer: the EXIF orientation, or its error.
    func testOnlyPlainFilesSkipLibspng() throws {
        let pixels = (0..<(28 * 28)).map { UInt8($0 % 251) }
        let png = PNGWriter.encode(width: 28, height: 28, color: .gray, pixels: pixels, filtered: true)
        func plain(_ data: Data) -> Bool { data.withUnsafeBytes { PNGRows.plainFile($0, maxPixels: PNGDecoder.packedMaxPixels) != nil } }
        XCTAssertTrue(plain(png))
        XCTAssertTrue(plain(PNGWriter.encode(width: 5, height: 3, color: .rgb, pixels: [UInt8](repeating: 1, count: 45), idatBytes: 7)))
        var badHeader = png
        badHeader[29] ^= 0x01   // the IHDR's CRC
        let exifFirst = PNGWriter.encode(width: 28, height: 28, color: .gray, pixels: pixels, exif: PNGWriter.exifOrientation(6))
        let exifAfter = PNGWriter.encode(width: 28, height: 28, color: .gray, pixels: pixels,
                                         exif: PNGWriter.exifOrientation(6), exifAfterData: true)
        var trailing = png
        trailing.append(contentsOf: [0, 0, 0, 0])
        let wide = PNGWriter.encode(width: 86, height: 2, color: .rgb, pixels: [UInt8](repeating: 9, count: 86 * 2 * 3))
        XCTAssertNil(wide.withUnsafeBytes { PNGRows.plainFile($0, maxPixels: 1 << 20) }, "a row over PNGRows.maxRowBytes")
        XCTAssertNil(png.withUnsafeBytes { PNGRows.plainFile($0, maxPixels: 28 * 28 - 1) }, "more pixels than allowed")
        for (name, data) in [("a bad IHDR CRC", badHeader), ("EXIF before the data", exifFirst), ("EXIF after the data", exifAfter),
                             ("bytes after IEND", trailing)] {
            XCTAssertFalse(plain(data), name)
        }
        for data in [exifFirst, exifAfter] {
            let orientation = try data.withUnsafeBytes { raw -> Int in
                let decoder = try PNGDecoder(raw, limits: .init())
                _ = try decoder.decode()
                return decoder.orientation
            }
            XCTAssertEqual(orientation, 6)
        }
        // A plain file whose image data does not inflate (CRCs right): `PNGRows` refuses it, and
        // libspng, made then, gives its error.
        var broken = png
        let idat = 8 + 25, length = Int(broken[idat]) << 24 | Int(broken[idat + 1]) << 16 | Int(broken[idat + 2]) << 8 | Int(broken[idat + 3])
        for i in (idat + 10)..<(idat + 8 + length) { broken[i] = 0xFF }
        let crc = Self.crc32(broken[(idat + 4)..<(idat + 8 + length)])
        for k in 0..<4 { broken[idat + 8 + length + k] = UInt8(truncatingIfNeeded: crc >> (24 - 8 * k)) }
        XCTAssertTrue(plain(broken))
        XCTAssertThrowsError(try broken.withUnsafeBytes { try PNGDecoder($0, limits: .init()).decode() }) { error in
            XCTAssertEqual((error as? ImageError)?.kind, .corrupt)
        }
    }

    /// CRC-32 of PNG chunks (ISO 3309, reflected, polynomial 0xEDB88320).
    private static func crc32(_ bytes: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    func testTruncatedGrayPNGIsStillACorruptImage() throws {
        let data = PNGWriter.encode(width: 28, height: 28, color: .gray, pixels: [UInt8](repeating: 7, count: 784))
        let cut = data.prefix(data.count - 30)
        XCTAssertThrowsError(try cut.withUnsafeBytes { try PNGDecoder($0, limits: .init()).decode() }) { error in
            XCTAssertEqual((error as? ImageError)?.kind, .corrupt)
        }
    }
}
