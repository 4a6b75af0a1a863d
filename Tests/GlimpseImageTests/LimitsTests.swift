import GlimpseTestSupport
import XCTest
@testable import GlimpseImage

/// Size limits are enforced from the header, before anything large is allocated, and other
/// formats are named in the error.
final class LimitsTests: XCTestCase {
    /// pillow_hopper.jpg with its SOF dimensions patched to `w`×`h` (a decompression bomb header).
    func jpegClaiming(_ w: Int, _ h: Int) throws -> Data {
        var d = [UInt8](try SharedData.data("images/formats/pillow_hopper.jpg"))
        var i = 2
        while i + 9 < d.count {
            guard d[i] == 0xFF else { XCTFail("bad marker walk"); break }
            let m = d[i + 1]
            if (0xC0...0xC2).contains(m) {
                d[i + 5] = UInt8(h >> 8); d[i + 6] = UInt8(h & 0xFF)
                d[i + 7] = UInt8(w >> 8); d[i + 8] = UInt8(w & 0xFF)
                return Data(d)
            }
            i += 2 + (Int(d[i + 2]) << 8 | Int(d[i + 3]))
        }
        XCTFail("no SOF marker")
        return Data()
    }

    func testEmptyData() {
        assertImageError(.empty, ["empty"]) { try preprocess(Data()) }
    }

    func testEncodedByteLimit() throws {
        let data = try SharedData.data("images/formats/pillow_hopper.jpg")
        assertImageError(.tooLarge, ["\(data.count) bytes", "limit of 1000 bytes"]) {
            try preprocess(data, limits: ImageLimits(maxEncodedBytes: 1000))
        }
    }

    func testJPEGBombHeaderIsRefusedBeforeDecoding() throws {
        let bomb = try jpegClaiming(60000, 60000)
        assertImageError(.tooLarge, ["60000x60000 = 3.6e9 pixels", "limit of 1.0e8"]) { try preprocess(bomb) }
        // A header within the limit passes the check and the image is decoded: the patched SOF of the
        // 128x128 file claims 128x64, so libjpeg-turbo decodes the first 64 rows of the real scan data
        // and skips the rest up to EOI with a warning ("extraneous bytes"), which the decoder does not
        // treat as corruption (only "premature end" is). So the limit refused the bomb, not the data.
        let small = try jpegClaiming(128, 64)
        let decoded = try preprocess(small)
        XCTAssertEqual(decoded.info.format, "jpeg")
        XCTAssertEqual([decoded.info.width, decoded.info.height], [128, 64], "decoded at the size the header claims")
        XCTAssertFalse(decoded.values.contains { $0.isNaN }, "every output value was written")
    }

    func testPixelLimitOnRealImages() throws {
        let jpeg = try SharedData.data("images/imagenet/car.jpg")          // 256x256
        assertImageError(.tooLarge, ["256x256", "6.6e4 pixels", "1.0e4"]) {
            try preprocess(jpeg, limits: ImageLimits(maxPixels: 10_000))
        }
        let png = try SharedData.data("images/formats/pillow_hopper.png")  // 128x128
        assertImageError(.tooLarge, ["PNG image is 128x128"]) { try preprocess(png, limits: ImageLimits(maxPixels: 10_000)) }
        XCTAssertNoThrow(try preprocess(png, limits: ImageLimits(maxPixels: 128 * 128)))
    }

    func testPNGBombHeaderIsRefusedBeforeDecoding() {
        var ihdr = PNGWriter.be32(60000) + PNGWriter.be32(60000)
        ihdr += [8, 2, 0, 0, 0]
        var png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        png += PNGWriter.chunk("IHDR", ihdr)
        png += PNGWriter.chunk("IDAT", PNGWriter.zlibStored([0, 0, 0, 0]))
        png += PNGWriter.chunk("IEND", [])
        assertImageError(.tooLarge, ["60000x60000 = 3.6e9 pixels"]) { try preprocess(png) }
    }

    func testOtherFormatsAreNamed() {
        let cases: [(String, [UInt8])] = [
            ("GIF", Array("GIF89a".utf8) + [1, 0, 1, 0, 0, 0, 0]),
            ("WebP", Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBPVP8 ".utf8)),
            ("TIFF", [0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0]),
            ("TIFF", [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8]),
            ("BMP", Array("BM".utf8) + [0, 0, 0, 0, 0, 0]),
            ("HEIF", [0, 0, 0, 0x18] + Array("ftypheic".utf8)),
            ("AVIF", [0, 0, 0, 0x18] + Array("ftypavif".utf8)),
        ]
        for (name, bytes) in cases {
            assertImageError(.unsupportedFormat, ["(\(name))", "accepted: JPEG, PNG"]) { try preprocess(Data(bytes)) }
        }
        assertImageError(.unsupportedFormat, ["unrecognized", "68 65 6C 6C 6F"]) { try preprocess(Data("hello world".utf8)) }
    }

    func testScientificFormatting() {
        XCTAssertEqual(scientific(3.6e9), "3.6e9")
        XCTAssertEqual(scientific(1e8), "1.0e8")
        XCTAssertEqual(scientific(99_960_000), "1.0e8")
        XCTAssertEqual(scientific(65536), "6.6e4")
    }

    /// `declaredPixels` reads the header only: PNG IHDR and JPEG SOF, patched sizes included.
    func testDeclaredPixelsComeFromTheHeader() throws {
        func pixels(_ d: Data) -> Int? { d.withUnsafeBytes { ImagePipeline.declaredPixels($0) } }
        XCTAssertEqual(pixels(try SharedData.data("images/digits/torchserve_7.png")), 28 * 28)
        XCTAssertEqual(pixels(try SharedData.data("images/imagenet/kitten_small.jpg")), 224 * 168)
        XCTAssertEqual(pixels(try jpegClaiming(40_000, 30_000)), 1_200_000_000)
        XCTAssertNil(pixels(Data("GIF89a....".utf8)))
        XCTAssertNil(pixels(Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0])), "a PNG cut before its IHDR")
        XCTAssertNil(pixels(Data([0xFF, 0xD8, 0xFF, 0xDA, 0, 2])), "a JPEG whose scan starts before any SOF")
        // 32-bit sides whose product passes Int (found by fuzz-rpc: it trapped the server).
        var huge = PNGWriter.encode(width: 1, height: 1, color: .gray, pixels: [0])
        huge.replaceSubrange(16..<24, with: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        XCTAssertEqual(pixels(huge), .max)
        var large = huge
        large.replaceSubrange(16..<24, with: [0x80, 0, 0, 0, 0, 0, 0, 0x02])
        XCTAssertEqual(pixels(large), 1 << 32, "2^31 × 2 fits")
        let spec = Preprocessing(width: 28, height: 28)
        try withUnsafeTemporaryAllocation(byteCount: spec.byteCount, alignment: 64) { slot in
            XCTAssertThrowsError(try huge.withUnsafeBytes { try ImagePipeline.preprocess($0, spec: spec, into: slot.baseAddress!) })
        }
    }
}
