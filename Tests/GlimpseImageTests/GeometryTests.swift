import XCTest
@testable import GlimpseImage

/// Crop-mode geometry: the reference's Pillow resize(256) + center crop(224) rounding, fit padding, fill.
final class GeometryTests: XCTestCase {
    func g(_ w: Int, _ h: Int, _ spec: Preprocessing = torchSpec, _ mode: CropMode = .center) -> CropGeometry {
        CropGeometry(sourceWidth: w, sourceHeight: h, spec: spec, mode: mode)
    }

    func testCenterMatchesTheReferencePreprocessing() {
        // Long side round(long × 256 / short); offset ⌊(size − 224) / 2⌋.
        XCTAssertEqual(g(500, 375), CropGeometry(resizedWidth: 341, resizedHeight: 256, offsetX: 58, offsetY: 16, outputWidth: 224, outputHeight: 224))
        XCTAssertEqual(g(375, 500), CropGeometry(resizedWidth: 256, resizedHeight: 341, offsetX: 16, offsetY: 58, outputWidth: 224, outputHeight: 224))
        XCTAssertEqual(g(1920, 1080).resizedWidth, 455)
        XCTAssertEqual(g(1920, 1080).offsetX, 115)      // ⌊115.5⌋ (torchvision: round-half-even → 116)
        XCTAssertEqual(g(4032, 3024).resizedWidth, 341)
        XCTAssertEqual(g(4032, 3024).offsetX, 58)
        XCTAssertEqual(g(256, 256).offsetX, 16)
        XCTAssertEqual(g(100, 100).resizedWidth, 256)   // upscaled
        // Shared photos where torchvision's truncation would differ from the reference:
        // vips_rotation_1_progressive_exif1.jpg (308×410: 340.78 → 341) and
        // pillow_app13-multiple_progressive_dogs.jpg (256×160: 409.6 → 410).
        XCTAssertEqual(g(308, 410).resizedHeight, 341)
        XCTAssertEqual(g(256, 160).resizedWidth, 410)
        // pillow_icc_profile_big_progressive_beach.jpg (425×250 → 435×256): offset ⌊105.5⌋ = 105.
        XCTAssertEqual(g(425, 250).offsetX, 105)
    }

    func testCenterWithoutResizeShortSide() {
        let square = Preprocessing(width: 28, height: 28, channelOrder: .gray)
        XCTAssertEqual(g(56, 28, square), CropGeometry(resizedWidth: 56, resizedHeight: 28, offsetX: 14, offsetY: 0, outputWidth: 28, outputHeight: 28))
        let wide = Preprocessing(width: 200, height: 100)
        let r = g(300, 300, wide)
        XCTAssertEqual(r.resizedWidth, 200)
        XCTAssertEqual(r.resizedHeight, 200)
        XCTAssertEqual(r.offsetY, 50)
        XCTAssertEqual(r.validX, 0..<200)
        XCTAssertEqual(r.validY, 0..<100)
    }

    func testCropLargerThanResizedIsPadded() {
        let spec = Preprocessing(width: 224, height: 224, resizeShortSide: 200)
        let r = g(200, 400, spec)
        XCTAssertEqual(r.offsetX, -12)
        XCTAssertEqual(r.validX, 12..<212)
        XCTAssertEqual(r.validY, 0..<224)
    }

    func testFitAndFill() {
        let spec = Preprocessing(width: 224, height: 224)
        let fit = g(400, 200, spec, .fit)
        XCTAssertEqual(fit, CropGeometry(resizedWidth: 224, resizedHeight: 112, offsetX: 0, offsetY: -56, outputWidth: 224, outputHeight: 224))
        XCTAssertEqual(fit.validY, 56..<168)
        let tall = g(100, 300, spec, .fit)
        XCTAssertEqual(tall.resizedWidth, 75)
        XCTAssertEqual(tall.validX, 74..<149)
        XCTAssertEqual(g(400, 200, spec, .fill), CropGeometry(resizedWidth: 224, resizedHeight: 224, offsetX: 0, offsetY: 0, outputWidth: 224, outputHeight: 224))
    }

    func testFitPadsWithZeroAndCentersTheImage() throws {
        // A white 400x200 image fitted into 64x64 with mean 0 / std 1: rows 16..<48 are 1, the rest 0.
        let img = SyntheticImage(width: 400, height: 200) { _, _ in (255, 255, 255) }
        let spec = Preprocessing(width: 64, height: 64, crop: .fit)
        let out = try preprocess(img.png(), spec: spec).values
        for c in 0..<3 { for y in 0..<64 { for x in stride(from: 0, to: 64, by: 7) {
            XCTAssertEqual(out[(c * 64 + y) * 64 + x], (16..<48).contains(y) ? 1 : 0, accuracy: 1e-6, "c\(c) y\(y) x\(x)")
        } } }
    }

    func testCenterCropPicksTheMiddle() throws {
        // 300x100, red | green (x 90..<210) | blue: the 96x96 center crop (short side 96, i.e. source
        // columns 100..<200 plus the filter's reach) is pure green.
        let img = SyntheticImage(width: 300, height: 100) { x, _ in x < 90 ? (255, 0, 0) : x < 210 ? (0, 255, 0) : (0, 0, 255) }
        let spec = Preprocessing(width: 96, height: 96)
        let out = try preprocess(img.png(), spec: spec).values
        let plane = 96 * 96
        XCTAssertEqual(out[0..<plane].max(), 0)                  // no red
        XCTAssertEqual(out[plane..<(2 * plane)].min() ?? 0, 1, accuracy: 1e-6)       // all green
        XCTAssertEqual(out[(2 * plane)...].max(), 0)             // no blue
        // The crop mode argument overrides spec.crop: fill keeps all three bands.
        let fill = try preprocess(img.png(), spec: spec, crop: .fill).values
        XCTAssertEqual(fill[0], 1, accuracy: 1e-6)
        XCTAssertEqual(fill[2 * plane + 95], 1, accuracy: 1e-6)
    }
}
