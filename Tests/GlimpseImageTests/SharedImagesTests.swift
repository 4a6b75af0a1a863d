import GlimpseTestSupport
import XCTest
@testable import GlimpseImage

/// Every file under ../shared/images either decodes or is refused with the expected reason.
final class SharedImagesTests: XCTestCase {
    enum Expect { case decodes, refused(ImageError.Kind, String) }

    static let bmp = Expect.refused(.unsupportedFormat, "unsupported image format (BMP); accepted: JPEG, PNG")

    /// Explicit expectation per file. A new file without an entry fails the test.
    static let expectations: [String: Expect] = [
        "digits/coral_9.bmp": bmp,
        "digits/torchserve_0.png": .decodes, "digits/torchserve_1.png": .decodes, "digits/torchserve_2.png": .decodes,
        "digits/torchserve_3.png": .decodes, "digits/torchserve_4.png": .decodes, "digits/torchserve_5.png": .decodes,
        "digits/torchserve_6.png": .decodes, "digits/torchserve_7.png": .decodes, "digits/torchserve_8.png": .decodes,
        "digits/torchserve_9.png": .decodes, "digits/winml_8.png": .decodes,
        "digits/wonnx_0.jpg": .decodes, "digits/wonnx_3.jpg": .decodes, "digits/wonnx_5.jpg": .decodes, "digits/wonnx_7.jpg": .decodes,
        "formats/coral_grace_hopper.bmp": bmp,
        "formats/exif_Landscape_0.jpg": .decodes, "formats/exif_Landscape_3.jpg": .decodes,
        "formats/exif_Landscape_6.jpg": .decodes, "formats/exif_Landscape_8.jpg": .decodes,
        "formats/ljt_monkey12.jpg": .refused(.unsupportedFormat, "12"),
        "formats/ljt_shira_bird8.bmp": bmp,
        "formats/ljt_testimgari.jpg": .decodes,   // arithmetic coding: Debian's libjpeg-turbo decodes it
        "formats/ljt_testimgint.jpg": .decodes,
        "formats/ljt_testorig.jpg": .decodes,
        "formats/ljt_testorig.png": .decodes,
        "formats/pillow_app13-multiple_progressive_dogs.jpg": .decodes,
        "formats/pillow_exif_imagemagick_orientation.png": .decodes,
        "formats/pillow_hopper.jpg": .decodes, "formats/pillow_hopper.png": .decodes,
        "formats/pillow_hopper_16bit_qtables.jpg": .decodes, "formats/pillow_hopper_gray.jpg": .decodes,
        "formats/pillow_hopper_orientation_3.jpg": .decodes, "formats/pillow_hopper_orientation_6.jpg": .decodes,
        "formats/pillow_hopper_orientation_8.jpg": .decodes,
        "formats/pillow_icc_profile_big_progressive_beach.jpg": .decodes,
        "formats/pillow_pil123rgba.png": .decodes, "formats/pillow_pil_sample_cmyk.jpg": .decodes,
        "formats/pillow_transparent.png": .decodes,
        "formats/vips_rotation_1_progressive_exif1.jpg": .decodes, "formats/vips_rotation_6_progressive_exif6.jpg": .decodes,
        "imagenet/Dog1.jpg": .decodes, "imagenet/Dog2.jpg": .decodes, "imagenet/car.jpg": .decodes,
        "imagenet/cat_coral.bmp": bmp, "imagenet/chickadee_coral.bmp": bmp, "imagenet/dragonfly_coral.bmp": bmp,
        "imagenet/croco.jpg": .decodes, "imagenet/dog_torchserve.jpg": .decodes, "imagenet/dog_xamarin.jpg": .decodes,
        "imagenet/elephants.jpg": .decodes, "imagenet/fish.png": .decodes, "imagenet/goldfish.jpg": .decodes,
        "imagenet/hancat.jpeg": .decodes, "imagenet/horse-cart.jpg": .decodes, "imagenet/hot_dog_coral.jpg": .decodes,
        "imagenet/kimono.jpg": .decodes, "imagenet/kitten_224.png": .decodes, "imagenet/kitten_small.jpg": .decodes,
        "imagenet/n01440764_3198_tench.png": .decodes, "imagenet/parrot_coral.jpg": .decodes,
        "imagenet/samoyed_dog.jpg": .decodes, "imagenet/vulture.jpeg": .decodes,
    ]

    func testEverySharedImageDecodesOrIsRefusedWithReason() throws {
        var seen = 0
        for dir in ["imagenet", "formats", "digits"] {
            for name in try SharedData.files(in: "images/\(dir)") {
                let path = "images/\(dir)/\(name)"
                let key = "\(dir)/\(name)"
                guard let expect = Self.expectations[key] else {
                    XCTFail("\(key): no expectation listed; add it to SharedImagesTests.expectations")
                    continue
                }
                seen += 1
                let data = try SharedData.data(path)
                for spec in [torchSpec, Preprocessing(width: 28, height: 28, channelOrder: .gray)] {
                    switch expect {
                    case .decodes:
                        do {
                            let (values, info) = try preprocess(data, spec: spec)
                            XCTAssertTrue(values.allSatisfy { $0.isFinite }, "\(key): non-finite output")
                            XCTAssertGreaterThan(info.width, 0)
                            XCTAssertTrue(values.contains { $0 != values[0] } || key.contains("digits"), "\(key): constant output")
                        } catch {
                            XCTFail("\(key): expected to decode, got \(error)")
                        }
                    case .refused(let kind, let fragment):
                        assertImageError(kind, [fragment]) { try preprocess(data, spec: spec) }
                    }
                }
            }
        }
        XCTAssertEqual(seen, Self.expectations.count, "some listed files are missing from ../shared/images")
    }

    func testFormatDetailsMatchPillow() throws {
        // Values Pillow 13 gives for these files (open + exif_transpose + convert("RGB")).
        let cmyk = try preprocess(try SharedData.data("images/formats/pillow_pil_sample_cmyk.jpg"))
        XCTAssertEqual(cmyk.info.width, 100)
        let gray = try preprocess(try SharedData.data("images/formats/pillow_hopper_gray.jpg"))
        // Gray JPEG: the three channels carry the same byte, so (v − mean) / std must agree.
        for i in stride(from: 0, to: 224 * 224, by: 997) {
            let r = gray.values[i] * 0.229 + 0.485, g = gray.values[224 * 224 + i] * 0.224 + 0.456
            XCTAssertEqual(r, g, accuracy: 1e-5)
        }
        let rgba = try preprocess(try SharedData.data("images/formats/pillow_transparent.png"))
        XCTAssertTrue(rgba.values.allSatisfy { $0.isFinite })
    }
}
