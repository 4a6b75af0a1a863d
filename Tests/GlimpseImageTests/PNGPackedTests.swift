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

    func testSharedDigitsMatchLibspngRGBA() throws {
        for name in ["digits/torchserve_3.png", "digits/winml_8.png", "formats/pillow_hopper.png", "imagenet/kitten_224.png", "imagenet/fish.png"] {
            let (packed, rgba) = try bothPaths(try SharedData.data("images/" + name))
            XCTAssertEqual(packed, rgba, name)
        }
    }

    func testTruncatedGrayPNGIsStillACorruptImage() throws {
        let data = PNGWriter.encode(width: 28, height: 28, color: .gray, pixels: [UInt8](repeating: 7, count: 784))
        let cut = data.prefix(data.count - 30)
        XCTAssertThrowsError(try cut.withUnsafeBytes { try PNGDecoder($0, limits: .init()).decode() }) { error in
            XCTAssertEqual((error as? ImageError)?.kind, .corrupt)
        }
    }
}
