import Foundation
import GlimpseEngine
import GlimpseImage
import GlimpseONNX
import GlimpseTensor
import GlimpseTestSupport
import XCTest

/// Every shared photo with an onnxruntime answer in `reference/predictions.json`, for each of its four
/// models, through GlimpseImage and the engine. JPEG DCT scaling is off, so the input tensor is the
/// reference's own Pillow preprocessing (EXIF orientation, alpha on white, bilinear resize, center crop)
/// and what is left to differ is the engine. Top-1 must equal onnxruntime's on every photo, close calls
/// included, and the largest difference of a top-5 probability is printed and bounded.
final class PhotoAgreementTests: XCTestCase {
    struct Agreement {
        var compared = 0
        var maxAbsDiff = 0.0
        var worstFile = ""
        var disagreements: [String] = []
    }

    /// 24-bit bottom-up BMP → RGB bytes (the shared BMPs are all of this kind).
    static func decodeBMP(_ b: [UInt8]) throws -> (w: Int, h: Int, rgb: [UInt8]) {
        guard b.count >= 54 else { throw EngineError("BMP header truncated") }
        func u32(_ o: Int) -> Int { Int(b[o]) | Int(b[o + 1]) << 8 | Int(b[o + 2]) << 16 | Int(b[o + 3]) << 24 }
        let offset = u32(10), w = u32(18), h = Int(Int32(truncatingIfNeeded: u32(22)))
        let stride = (w * 3 + 3) / 4 * 4
        guard b[28] == 24, u32(30) == 0, w > 0, h > 0, offset + stride * h <= b.count else {
            throw EngineError("test expects an uncompressed 24-bit bottom-up BMP")
        }
        var rgb = [UInt8](repeating: 0, count: w * h * 3)
        for y in 0..<h {
            let row = offset + (h - 1 - y) * stride
            for x in 0..<w {
                for c in 0..<3 { rgb[(y * w + x) * 3 + c] = b[row + x * 3 + (2 - c)] }
            }
        }
        return (w, h, rgb)
    }

    /// The photo, preprocessed as the reference was. BMP (which the service refuses) goes through the
    /// same crop, resize and normalization code from pixels decoded by the test's own BMP reader.
    static func input(_ file: String, spec: Preprocessing) throws -> Tensor {
        let t = Tensor(shape: [1, spec.channels, spec.height, spec.width], dtype: spec.dtype)
        let bytes = try SharedData.bytes(file)
        if file.lowercased().hasSuffix(".bmp") {
            let (w, h, rgb) = try decodeBMP(bytes)
            try rgb.withUnsafeBytes {
                try ImagePipeline.preprocess(pixels: $0, width: w, height: h, channels: 3, spec: spec, into: t.rawPointer)
            }
        } else {
            _ = try bytes.withUnsafeBytes {
                try ImagePipeline.preprocess($0, spec: spec, options: DecodeOptions(dctScaling: .off), into: t.rawPointer)
            }
        }
        return t
    }

    /// Softmax, unless the output already is a distribution (squeezenet1.1-fp16 ends in a Softmax):
    /// the rule the service applies before answering.
    static func probabilities(_ logits: [Float]) -> [Double] {
        let total = logits.reduce(0.0) { $0 + Double($1) }
        if logits.allSatisfy({ $0 >= 0 && $0 <= 1 }), abs(total - 1) < 1e-2 { return logits.map(Double.init) }
        let m = Double(logits.max() ?? 0)
        let e = logits.map { exp(Double($0) - m) }
        let sum = e.reduce(0, +)
        return e.map { $0 / sum }
    }

    func agreement(model: String, spec: Preprocessing) throws -> Agreement {
        let json = try JSONSerialization.jsonObject(with: Data(try SharedData.bytes("reference/predictions.json")))
        guard let root = json as? [String: Any], let ort = root["onnxruntime"] as? [String: Any],
              let entries = ort[model] as? [String: Any] else {
            throw EngineError("reference/predictions.json has no onnxruntime answers for \(model)")
        }
        let m = try ONNXLoader.load(path: try SharedData.path("models/\(model).onnx"))
        var result = Agreement()
        for (file, value) in entries.sorted(by: { $0.key < $1.key }) {
            guard let entry = value as? [String: Any] else { continue }
            if entry["error"] != nil {
                // The reference could not read this file (Pillow refuses 12-bit JPEG), so there is no
                // answer to compare with; the service refuses it too (GlimpseImageTests).
                continue
            }
            guard let top5 = entry["top5"] as? [Int], let scores = entry["scores"] as? [Double], top5.count == scores.count,
                  let expected = top5.first else {
                XCTFail("\(model) \(file): malformed reference entry")
                continue
            }
            let out = try m.run([try Self.input(file, spec: spec)])[0].floats()
            XCTAssertEqual(out.count, 1000, "\(model) \(file)")
            let p = Self.probabilities(out)
            let top1 = p.indices.max(by: { p[$0] < p[$1] }) ?? -1
            if top1 != expected {
                result.disagreements.append("\(file): Glimpse \(top1) (\(p[top1])), onnxruntime \(expected) (\(scores[0]))")
            }
            for (c, s) in zip(top5, scores) where abs(p[c] - s) > result.maxAbsDiff {
                result.maxAbsDiff = abs(p[c] - s)
                result.worstFile = file
            }
            result.compared += 1
        }
        print("\(model): \(result.compared) photos, top-1 disagreements \(result.disagreements.count), "
              + "max |Δp| over onnxruntime's top-5 \(result.maxAbsDiff) (\(result.worstFile))")
        return result
    }

    /// The reference rounds its probabilities to 5 decimals, so 5e-6 is the floor of any comparison.
    func check(_ model: String, spec: Preprocessing, minimumCompared: Int = 47, maxAbsDiff: Double) throws {
        let r = try agreement(model: model, spec: spec)
        XCTAssertGreaterThanOrEqual(r.compared, minimumCompared, "\(model): too few photos compared")
        XCTAssertEqual(r.disagreements, [], "\(model): top-1 differs from onnxruntime")
        XCTAssertLessThanOrEqual(r.maxAbsDiff, maxAbsDiff, "\(model): worst on \(r.worstFile)")
    }

    static let torch = Preprocessing(width: 224, height: 224, resizeShortSide: 256, crop: .center, channelOrder: .rgb,
                                     scale: 1.0 / 255.0, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225])
    static let caffeFP16 = Preprocessing(width: 224, height: 224, resizeShortSide: 256, crop: .center, channelOrder: .bgr,
                                         scale: 1, mean: [103.94, 116.78, 123.68], std: [1, 1, 1], dtype: .float16)

    func testMobileNetV2Int8() throws { try check("mobilenetv2-int8", spec: Self.torch, maxAbsDiff: 1e-5) }
    func testShuffleNetV2QDQ() throws { try check("shufflenet-v2-qdq", spec: Self.torch, maxAbsDiff: 1e-5) }
    func testSqueezeNet() throws { try check("squeezenet1.1", spec: Self.torch, maxAbsDiff: 1e-5) }
    func testSqueezeNetFP16() throws { try check("squeezenet1.1-fp16", spec: Self.caffeFP16, maxAbsDiff: 1e-4) }

    func testFP16Specs() throws {
        let m = try ONNXLoader.load(path: try SharedData.path("models/squeezenet1.1-fp16.onnx"))
        XCTAssertEqual(m.inputs.first?.dtype, .float16)
        XCTAssertEqual(m.inputs.first?.shape, [1, 3, 224, 224])
        XCTAssertEqual(m.outputs.first?.dtype, .float16)
        XCTAssertEqual(m.outputs.first?.shape, [1, 1000, 1, 1])
    }
}
