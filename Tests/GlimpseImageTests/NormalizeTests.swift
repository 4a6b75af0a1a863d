import GlimpseTestSupport
import XCTest
import GlimpseTensor
@testable import GlimpseImage

/// Channel order, layout, dtype, invert, scale, mean/std, gray, alpha on white.
final class NormalizeTests: XCTestCase {
    let solid = SyntheticImage(width: 8, height: 6) { x, _ in x < 4 ? (10, 100, 200) : (250, 0, 30) }

    func value(_ v: Float, _ spec: Preprocessing, _ c: Int) -> Float {
        ((spec.invert ? 255 - v : v) * spec.scale - spec.mean[c]) / spec.std[c]
    }

    func testRGBAndBGRInNCHWAndNHWC() throws {
        let mean: [Float] = [0.485, 0.456, 0.406], std: [Float] = [0.229, 0.224, 0.225]
        for order in [ChannelOrder.rgb, .bgr] {
            for layout in [TensorLayout.nchw, .nhwc] {
                let spec = Preprocessing(width: 8, height: 6, crop: .fill, channelOrder: order, layout: layout, mean: mean, std: std)
                let out = try preprocess(solid.png(), spec: spec).values
                for y in 0..<6 { for x in 0..<8 {
                    let (r, g, b) = solid.pixel(x, y)
                    let src = order == .rgb ? [r, g, b] : [b, g, r]
                    for c in 0..<3 {
                        let i = layout == .nchw ? (c * 6 + y) * 8 + x : (y * 8 + x) * 3 + c
                        XCTAssertEqual(out[i], value(Float(src[c]), spec, c), accuracy: 1e-5, "\(order) \(layout) \(x),\(y),\(c)")
                    }
                } }
            }
        }
    }

    /// Rows of 16 pixels and more go through the vector path (`AffineRows`), the rest of a row
    /// through the tables: every value must be exactly the tables' formula, in both orders, inverted
    /// or not, at widths around the block size.
    func testVectorRowsEqualTheTablesExactly() throws {
        let mean: [Float] = [0.485, 0.456, 0.406], std: [Float] = [0.229, 0.224, 0.0]
        for width in [15, 16, 17, 40] {
            let image = SyntheticImage(width: width, height: 3) { x, y in
                (UInt8((x * 37 + y * 11) & 255), UInt8((x * 101 + 7) & 255), UInt8((255 - x * 13 - y) & 255))
            }
            for order in [ChannelOrder.rgb, .bgr] {
                for invert in [false, true] {
                    let spec = Preprocessing(width: width, height: 3, crop: .fill, channelOrder: order, layout: .nchw,
                                             scale: 0.0173, mean: mean, std: std, invert: invert)
                    let out = try preprocess(image.png(), spec: spec).values
                    var tableSpec = spec
                    tableSpec.std = std.map { $0 == 0 ? 1 : $0 }
                    for y in 0..<3 { for x in 0..<width {
                        let (r, g, b) = image.pixel(x, y)
                        let src = order == .rgb ? [r, g, b] : [b, g, r]
                        for c in 0..<3 {
                            let expected = value(Float(src[c]), tableSpec, c)
                            XCTAssertEqual(out[(c * 3 + y) * width + x], expected, "\(width) \(order) \(invert) \(x),\(y),\(c)")
                        }
                    } }
                }
            }
        }
    }

    /// Gray rows: each value exactly the table's formula applied to Pillow's luminance, inverted or
    /// not, at widths around a vector's 16 pixels.
    func testGrayRowsEqualTheTablesExactly() throws {
        for width in [15, 16, 17, 40] {
            let image = SyntheticImage(width: width, height: 3) { x, y in
                (UInt8((x * 37 + y * 11) & 255), UInt8((x * 101 + 7) & 255), UInt8((255 - x * 13 - y) & 255))
            }
            for invert in [false, true] {
                let spec = Preprocessing(width: width, height: 3, crop: .fill, channelOrder: .gray, layout: .nchw,
                                         scale: 0.0173, mean: [0.1307], std: [0.3081], invert: invert)
                let out = try preprocess(image.png(), spec: spec).values
                for y in 0..<3 { for x in 0..<width {
                    let (r, g, b) = image.pixel(x, y)
                    let expected = value(luma(Int(r), Int(g), Int(b)), spec, 0)
                    XCTAssertEqual(out[y * width + x], expected, "\(width) \(invert) \(x),\(y)")
                } }
            }
        }
    }

    /// Pillow convert("L"): (R*19595 + G*38470 + B*7471 + 0x8000) >> 16
    func luma(_ r: Int, _ g: Int, _ b: Int) -> Float {
        let sum: Int = r * 19595 + g * 38470 + b * 7471 + 0x8000
        return Float(sum >> 16)
    }

    func testGrayIsPillowLuminance() throws {
        let spec = Preprocessing(width: 8, height: 6, crop: .fill, channelOrder: .gray, scale: 1)
        let out = try preprocess(solid.png(), spec: spec).values
        XCTAssertEqual(out[0], luma(10, 100, 200))
        XCTAssertEqual(out[7], luma(250, 0, 30))
    }

    func testInvertAndCaffeBGR() throws {
        let inv = Preprocessing(width: 8, height: 6, crop: .fill, channelOrder: .gray, scale: 1, invert: true)
        let g = try preprocess(solid.png(), spec: inv).values
        XCTAssertEqual(g[0], 255 - luma(10, 100, 200))
        let caffe = Preprocessing(width: 8, height: 6, crop: .fill, channelOrder: .bgr, scale: 1, mean: [103.94, 116.78, 123.68])
        let c = try preprocess(solid.png(), spec: caffe).values
        XCTAssertEqual(c[0], 200 - 103.94, accuracy: 1e-4)          // B
        XCTAssertEqual(c[2 * 48], 10 - 123.68, accuracy: 1e-4)      // R
    }

    func testFloat16MatchesFloat32() throws {
        var spec = Preprocessing(width: 224, height: 224, resizeShortSide: 256, channelOrder: .bgr, scale: 1,
                                 mean: [103.94, 116.78, 123.68], dtype: .float16)
        let data = try SharedData.data("images/imagenet/goldfish.jpg")
        let half = try preprocess16(data, spec: spec)
        XCTAssertEqual(spec.byteCount, 224 * 224 * 3 * 2)
        spec.dtype = .float32
        let full = try preprocess(data, spec: spec).values
        for i in stride(from: 0, to: full.count, by: 101) {
            XCTAssertEqual(half[i], full[i], accuracy: abs(full[i]) / 1000 + 1e-3)
        }
    }

    func testWritesExactlyByteCount() throws {
        // Guard bytes around the slot must stay untouched, and every byte of the slot must be written
        // (the server does not zero-fill the slot first), for every layout/dtype/mode: the same image
        // into a slot of 0xAB and into a slot of zeros gives the same bytes.
        for image in ["images/formats/pillow_hopper.jpg", "images/imagenet/kitten_small.jpg"] {
            let data = try SharedData.data(image)
            for dtype in [DType.float32, .float16] { for layout in [TensorLayout.nchw, .nhwc] { for mode in CropMode.allCases {
                for order in [ChannelOrder.rgb, .gray] {
                    let spec = Preprocessing(width: 37, height: 23, crop: mode, channelOrder: order, layout: layout, dtype: dtype)
                    var slots: [[UInt8]] = []
                    for fill: UInt8 in [0xAB, 0] {
                        var buffer = [UInt8](repeating: fill, count: spec.byteCount + 128)
                        _ = try data.withUnsafeBytes { raw in
                            try buffer.withUnsafeMutableBytes { try ImagePipeline.preprocess(raw, spec: spec, into: $0.baseAddress! + 64) }
                        }
                        XCTAssertTrue(buffer.prefix(64).allSatisfy { $0 == fill })
                        XCTAssertTrue(buffer.suffix(64).allSatisfy { $0 == fill }, "\(image) \(dtype) \(layout) \(mode) \(order)")
                        slots.append(Array(buffer[64..<(64 + spec.byteCount)]))
                    }
                    XCTAssertEqual(slots[0], slots[1], "\(image) \(dtype) \(layout) \(mode) \(order): a byte of the slot was not written")
                }
            } } }
        }
    }

    func testAlphaIsCompositedOnWhite() throws {
        // Fully transparent black → white; half-transparent red → pink.
        var px = [UInt8]()
        for x in 0..<4 { px += x < 2 ? [0, 0, 0, 0] : [255, 0, 0, 128] }
        let png = PNGWriter.encode(width: 4, height: 1, color: .rgba, pixels: px)
        let spec = Preprocessing(width: 4, height: 1, crop: .fill, scale: 1)
        let out = try preprocess(png, spec: spec).values
        XCTAssertEqual(Array(out[0..<4]), [255, 255, 255, 255])           // R
        XCTAssertEqual(Array(out[4..<8]), [255, 255, 127, 127])           // G: 255 * 127 / 255
    }

    func testUnsupportedDTypeAndMissingMean() {
        let png = solid.png()
        assertImageError(.unsupportedFormat, ["int8"]) {
            try preprocess(png, spec: Preprocessing(width: 4, height: 4, dtype: .int8))
        }
        assertImageError(.corrupt, ["mean"]) { try preprocess(png, spec: Preprocessing(width: 4, height: 4, mean: [0])) }
    }
}
