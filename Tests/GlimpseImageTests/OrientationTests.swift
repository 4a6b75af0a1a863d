import GlimpseTestSupport
import XCTest
@testable import GlimpseImage

/// EXIF orientation is applied before cropping: rotated files give the upright image.
final class OrientationTests: XCTestCase {
    private func tensor(_ path: String) throws -> (values: [Float], info: ImageInfo) {
        try preprocess(try SharedData.data("images/formats/\(path)"))
    }

    func testExifLandscapeMatchesUpright() throws {
        let upright = try tensor("exif_Landscape_0.jpg")
        XCTAssertEqual(upright.info.orientation, 1)
        for o in [3, 6, 8] {
            let rotated = try tensor("exif_Landscape_\(o).jpg")
            XCTAssertEqual(rotated.info.orientation, o)
            XCTAssertEqual(rotated.info.width, upright.info.width)
            XCTAssertEqual(rotated.info.height, upright.info.height)
            XCTAssertLessThan(meanAbsDiff(rotated.values, upright.values), 0.05, "orientation \(o)")
        }
        // The comparison discriminates: the upright scene rotated by 180° (or mirrored) differs a lot.
        let u = upright.values
        let turned = u.indices.map { i -> Float in
            let c = i / (224 * 224), r = i % (224 * 224)
            return u[c * 224 * 224 + (224 * 224 - 1 - r)]
        }
        let mirrored = u.indices.map { i -> Float in u[i - i % 224 + (223 - i % 224)] }
        XCTAssertGreaterThan(meanAbsDiff(turned, u), 0.2)
        XCTAssertGreaterThan(meanAbsDiff(mirrored, u), 0.2)
    }

    func testPillowHopperOrientationsMatchUpright() throws {
        let upright = try tensor("pillow_hopper.jpg")
        for o in [3, 6, 8] {
            let rotated = try tensor("pillow_hopper_orientation_\(o).jpg")
            XCTAssertEqual(rotated.info.orientation, o)
            XCTAssertLessThan(meanAbsDiff(rotated.values, upright.values), 0.1, "orientation \(o)")
        }
    }

    func testImageMagickPNGRawProfileOrientation() throws {
        let data = try SharedData.data("images/formats/pillow_exif_imagemagick_orientation.png")
        let result = try preprocess(data)
        XCTAssertEqual(result.info.orientation, 3)
        // Decode the pixels without orientation, rotate by 180° ourselves, re-encode without EXIF.
        let raw: PixelBuffer = try data.withUnsafeBytes { try PNGDecoder($0, limits: .init()).decode() }
        let image = SyntheticImage(width: raw.width, height: raw.height) { x, y in
            let p = raw.base + ((raw.height - 1 - y) * raw.width + (raw.width - 1 - x)) * 4
            return (p[0], p[1], p[2])
        }
        let upright = try preprocess(image.png())
        XCTAssertEqual(upright.info.orientation, 1)
        XCTAssertEqual(meanAbsDiff(result.values, upright.values), 0, accuracy: 1e-6)
    }

    func testAllEightOrientationsViaPNGeXIf() throws {
        // 40x24 with a position gradient and a marker in one corner.
        let upright = SyntheticImage(width: 40, height: 24) { x, y in
            (UInt8(x * 6), UInt8(y * 10), x < 8 && y < 4 ? 255 : 0)
        }
        let spec = Preprocessing(width: 40, height: 24, crop: .fill)
        let expected = try preprocess(upright.png(), spec: spec)
        for o in 1...8 {
            let stored = upright.stored(for: o)
            for after in [false, true] {   // eXIf may come before or after the image data
                let got = try preprocess(stored.png(exifOrientation: o, exifAfterData: after), spec: spec)
                XCTAssertEqual(got.info.orientation, o, "after IDAT: \(after)")
                XCTAssertEqual(got.info.width, 40)
                XCTAssertEqual(meanAbsDiff(got.values, expected.values), 0, accuracy: 1e-6, "orientation \(o)")
            }
        }
    }

    func testEXIFParserIsBoundsChecked() {
        // Little- and big-endian blocks parse; truncated or garbage blocks mean "upright".
        for little in [false, true] {
            let block = PNGWriter.exifOrientation(6, littleEndian: little)
            XCTAssertEqual(block.withUnsafeBytes { EXIF.orientation(tiff: $0) }, 6)
            for cut in 0..<20 {  // the orientation value ends at byte 20
                let v = Array(block.prefix(cut)).withUnsafeBytes { EXIF.orientation(tiff: $0) }
                XCTAssertEqual(v, 1, "cut at \(cut)")
            }
        }
        var bad = PNGWriter.exifOrientation(6)
        bad[4...7] = [0xFF, 0xFF, 0xFF, 0xF0]  // IFD offset far outside
        XCTAssertEqual(bad.withUnsafeBytes { EXIF.orientation(tiff: $0) }, 1)
        var nine = PNGWriter.exifOrientation(9)
        XCTAssertEqual(nine.withUnsafeBytes { EXIF.orientation(tiff: $0) }, 1)
        nine = Array("Exif\0\0".utf8) + PNGWriter.exifOrientation(8)
        XCTAssertEqual(nine.withUnsafeBytes { EXIF.orientation(tiff: $0) }, 8)
    }
}
