import Foundation
import GlimpseEngine
import GlimpseONNX
import GlimpseTensor
import XCTest

/// Top-1 agreement with onnxruntime (reference/predictions.json) on BMP photos where onnxruntime's
/// top-1 and top-2 are clearly apart, for the models without an output.npy reference (float16,
/// QDQ) and for the others as an end-to-end check.
final class ImageClassificationTests: XCTestCase {
    /// 24-bit bottom-up BMP → RGB bytes.
    static func decodeBMP(_ b: [UInt8]) throws -> (w: Int, h: Int, rgb: [UInt8]) {
        func u32(_ o: Int) -> Int { Int(b[o]) | Int(b[o + 1]) << 8 | Int(b[o + 2]) << 16 | Int(b[o + 3]) << 24 }
        let offset = u32(10), w = u32(18), h = Int(Int32(truncatingIfNeeded: u32(22)))
        guard b[28] == 24, w > 0, h > 0 else { throw EngineError("test expects a 24-bit bottom-up BMP") }
        let stride = (w * 3 + 3) / 4 * 4
        var rgb = [UInt8](repeating: 0, count: w * h * 3)
        for y in 0..<h {
            let row = offset + (h - 1 - y) * stride
            for x in 0..<w {
                for c in 0..<3 { rgb[(y * w + x) * 3 + c] = b[row + x * 3 + (2 - c)] }
            }
        }
        return (w, h, rgb)
    }

    /// Pillow-style bilinear resize (triangle filter widened by the scale when shrinking), one axis.
    static func resizeAxis(_ src: [Float], w: Int, h: Int, channels: Int, newW: Int) -> [Float] {
        let scale = Double(w) / Double(newW)
        let support = max(1.0, scale)
        var out = [Float](repeating: 0, count: newW * h * channels)
        for x in 0..<newW {
            let center = (Double(x) + 0.5) * scale
            let lo = max(0, Int(center - support + 0.5)), hi = min(w, Int(center + support + 0.5))
            var weights: [Double] = []
            for i in lo..<hi { weights.append(max(0, 1 - abs((Double(i) - center + 0.5) / support))) }
            let total = weights.reduce(0, +)
            for y in 0..<h {
                for c in 0..<channels {
                    var acc = 0.0
                    for (k, i) in (lo..<hi).enumerated() { acc += weights[k] * Double(src[(y * w + i) * channels + c]) }
                    out[(y * newW + x) * channels + c] = Float(acc / total)
                }
            }
        }
        return out
    }

    /// Resize short side to 256, center-crop 224; returns HWC RGB floats in 0–255.
    static func preprocess(_ path: String) throws -> [Float] {
        let (w, h, rgb) = try decodeBMP(try SharedData.bytes(path))
        let (nw, nh) = w < h ? (256, Int((Double(h) * 256 / Double(w)).rounded())) : (Int((Double(w) * 256 / Double(h)).rounded()), 256)
        // Pillow rounds each channel back to 8 bits after resizing.
        let horizontal = resizeAxis(rgb.map(Float.init), w: w, h: h, channels: 3, newW: nw)
        var transposed = [Float](repeating: 0, count: nw * h * 3)
        for y in 0..<h { for x in 0..<nw { for c in 0..<3 { transposed[(x * h + y) * 3 + c] = horizontal[(y * nw + x) * 3 + c] } } }
        let vertical = resizeAxis(transposed, w: h, h: nw, channels: 3, newW: nh)
        let left = (nw - 224) / 2, top = (nh - 224) / 2
        var out = [Float](repeating: 0, count: 224 * 224 * 3)
        for y in 0..<224 {
            for x in 0..<224 {
                for c in 0..<3 {
                    out[(y * 224 + x) * 3 + c] = min(255, max(0, vertical[((x + left) * nh + y + top) * 3 + c].rounded()))
                }
            }
        }
        return out
    }

    static func torchInput(_ hwc: [Float]) -> Tensor {
        let mean: [Float] = [0.485, 0.456, 0.406], std: [Float] = [0.229, 0.224, 0.225]
        let t = Tensor(shape: [1, 3, 224, 224], dtype: .float32)
        for c in 0..<3 { for i in 0..<(224 * 224) { t.f32[c * 224 * 224 + i] = (hwc[i * 3 + c] / 255 - mean[c]) / std[c] } }
        return t
    }

    static func caffeFP16Input(_ hwc: [Float]) -> Tensor {
        let mean: [Float] = [103.94, 116.78, 123.68]   // B, G, R
        let t = Tensor(shape: [1, 3, 224, 224], dtype: .float16)
        let p = t.rawPointer.assumingMemoryBound(to: UInt16.self)
        for c in 0..<3 {
            for i in 0..<(224 * 224) { p[c * 224 * 224 + i] = Float16(hwc[i * 3 + (2 - c)] - mean[c]).bitPattern }
        }
        return t
    }

    static let cases: [(String, Int)] = [
        ("images/imagenet/chickadee_coral.bmp", 19),
        ("images/imagenet/cat_coral.bmp", 285),
        ("images/imagenet/dragonfly_coral.bmp", 319),
    ]

    /// Preprocessed images, computed once per test process (the resize is slow in debug builds).
    static let images: [String: [Float]] = {
        var r: [String: [Float]] = [:]
        for (image, _) in cases { r[image] = try? preprocess(image) }
        return r
    }()

    func checkTop1(_ model: String, fp16: Bool = false) throws {
        let m = try ONNXLoader.load(path: try SharedData.path("models/\(model)"))
        for (image, expected) in Self.cases {
            guard let hwc = Self.images[image] else { throw EngineError("cannot preprocess \(image)") }
            let out = try m.run([fp16 ? Self.caffeFP16Input(hwc) : Self.torchInput(hwc)])[0]
            if fp16 { XCTAssertEqual(out.dtype, .float16) }
            let scores = out.floats()
            XCTAssertEqual(argmax(scores[...]), expected, "\(model) on \(image)")
        }
    }

    func testSqueezeNet() throws { try checkTop1("squeezenet1.1.onnx") }
    func testSqueezeNetFP16() throws { try checkTop1("squeezenet1.1-fp16.onnx", fp16: true) }
    func testMobileNetV2Int8() throws { try checkTop1("mobilenetv2-int8.onnx") }
    func testShuffleNetQDQ() throws { try checkTop1("shufflenet-v2-qdq.onnx") }

    func testFP16Specs() throws {
        let m = try ONNXLoader.load(path: try SharedData.path("models/squeezenet1.1-fp16.onnx"))
        XCTAssertEqual(m.inputs.first?.dtype, .float16)
        XCTAssertEqual(m.inputs.first?.shape, [1, 3, 224, 224])
        XCTAssertEqual(m.outputs.first?.dtype, .float16)
        XCTAssertEqual(m.outputs.first?.shape, [1, 1000, 1, 1])
    }
}
