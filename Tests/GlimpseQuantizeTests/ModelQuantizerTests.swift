import Foundation
import GlimpseEngine
import GlimpseONNX
@testable import GlimpseQuantize
import GlimpseTestSupport
import XCTest

/// Quantizes the shared SqueezeNet 1.1 in every mode and checks the variant: it loads in the engine,
/// shrinks as expected, and classifies a handful of shared photos like the float32 model.
final class ModelQuantizerTests: XCTestCase {
    /// A few photos of different classes and formats (JPEG and PNG).
    static let photos = ["Dog1.jpg", "car.jpg", "fish.png", "goldfish.jpg", "kitten_small.jpg", "parrot_coral.jpg"]

    var workDir: URL!

    override func setUpWithError() throws {
        workDir = try temporaryFolder("quantize").url
        let images = workDir.appendingPathComponent("images")
        try FileManager.default.createDirectory(at: images, withIntermediateDirectories: true)
        for p in Self.photos {
            try FileManager.default.createSymbolicLink(atPath: images.appendingPathComponent(p).path,
                                                       withDestinationPath: try SharedData.path("images/imagenet/\(p)"))
        }
    }

    /// Quantizes squeezenet1.1, writes it, and compares it with the float32 model on the photos.
    func check(_ mode: QuantizationMode, sizeRatio: ClosedRange<Double>, minAgreement: Double,
               file: StaticString = #filePath, line: UInt = #line) throws -> QuantizationReport {
        let model = try SharedData.path("models/squeezenet1.1.onnx")
        let out = workDir.appendingPathComponent("squeezenet1.1-\(mode.fileSuffix).onnx").path
        let result = try ModelQuantizer.quantizeFile(at: model, to: out, mode: mode)
        XCTAssertEqual(result.tensors.count, 26, "every Conv weight of SqueezeNet is quantized", file: file, line: line)
        let report = try QuantizationReport.measure(reference: model, variant: out, mode: mode.description,
                                                    imagesDirectory: workDir.appendingPathComponent("images").path,
                                                    preprocessing: SharedData.imagenet, loadRepeats: 1, rounds: 1)
        XCTAssertEqual(report.imageCount, Self.photos.count, "skipped: \(report.skipped)", file: file, line: line)
        let ratio = Double(report.variant.fileBytes) / Double(report.reference.fileBytes)
        XCTAssert(sizeRatio.contains(ratio), "\(mode): size ratio \(ratio) not in \(sizeRatio)", file: file, line: line)
        XCTAssertGreaterThanOrEqual(report.top1Agreement, minAgreement,
                                    "\(mode): top-1 differs on \(report.disagreements)", file: file, line: line)
        return report
    }

    func testFP16() throws {
        let r = try check(.fp16, sizeRatio: 0.48...0.52, minAgreement: 1.0)
        XCTAssertLessThan(r.maxAbsSoftmaxDiff, 1e-2)
    }

    func testInt8Linear() throws {
        _ = try check(.int8Linear, sizeRatio: 0.24...0.28, minAgreement: 0.95)
    }

    func testInt8KMeans() throws {
        _ = try check(.int8KMeans(bits: 8), sizeRatio: 0.24...0.28, minAgreement: 0.98)
    }

    /// Fewer bits still give a valid model whose weights take at most 2^bits values per output
    /// channel (per tensor without channel scales).
    func testKMeansFewBitsLoads() throws {
        let bytes = try SharedData.bytes("models/squeezenet1.1.onnx")
        for channelScales in [true, false] {
            let result = try ModelQuantizer.quantize(bytes, name: "squeezenet1.1", mode: .int8KMeans(bits: 3),
                                                     options: QuantizationOptions(kmeansChannelScales: channelScales))
            let graph = try ONNXLoader.importGraph(bytes: result.bytes, name: "squeezenet1.1-kmeans3")
            // The passes only: the weights as the operators will pack them (packing drops the constants).
            try GraphOptimizer.rewrite(graph)
            let weights = graph.nodes.filter { $0.op.opType == "Conv" }.compactMap { graph.constant($0.inputs[1]) }
            XCTAssertEqual(weights.count, 26)
            for w in weights where w.count >= 1024 {
                // No BatchNorm in SqueezeNet: the engine's weights are exactly the table values.
                let values = w.floats()
                if channelScales {
                    let perChannel = values.count / w.shape[0]
                    for c in 0..<w.shape[0] {
                        XCTAssertLessThanOrEqual(Set(values[(c * perChannel)..<((c + 1) * perChannel)]).count, 8)
                    }
                } else {
                    XCTAssertLessThanOrEqual(Set(values).count, 8)
                }
            }
        }
    }

    func testKMeansIsDeterministicAndOrdered() {
        var state: UInt64 = 42
        let values: [Float] = (0..<5000).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state >> 11) % 2000) / 1000 - 1
        }
        let a = WeightQuantization.kmeans(values, k: 16, maxIterations: 100)
        let b = WeightQuantization.kmeans(values, k: 16, maxIterations: 100)
        XCTAssertEqual(a.centroids, b.centroids)
        XCTAssertEqual(a.indices, b.indices)
        XCTAssertEqual(a.centroids, a.centroids.sorted())
        // Each value sits at its nearest centroid.
        for (v, i) in zip(values, a.indices) {
            let best = a.centroids.map { abs($0 - v) }.min()!
            XCTAssertEqual(abs(a.centroids[Int(i)] - v), best, accuracy: 1e-6)
        }
    }

    func testSymmetricInt8PerChannel() {
        let w: [Float] = [0.5, -1.0, 0.25, 0.0, /* channel 1 */ 2.0, 1.0, -0.5, 0.1]
        let (q, scales) = WeightQuantization.symmetricInt8(w, dims: [2, 4], axis: 0)
        XCTAssertEqual(scales[0], 1.0 / 127, accuracy: 1e-9)
        XCTAssertEqual(scales[1], 2.0 / 127, accuracy: 1e-9)
        XCTAssertEqual(q.map { Int8(bitPattern: $0) }, [64, -127, 32, 0, 127, 64, -32, 6])
    }

    func testCorruptInputFailsClearly() throws {
        let bytes = try SharedData.bytes("models/squeezenet1.1.onnx")
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("truncated", Array(bytes.prefix(bytes.count / 2))),
            ("text", Array("this is not an onnx model".utf8)),
        ]
        for (label, input) in cases {
            XCTAssertThrowsError(try ModelQuantizer.quantize(input, name: label, mode: .int8Linear), label) { error in
                guard let e = error as? QuantizationError else { return XCTFail("\(label): unexpected \(error)") }
                XCTAssertEqual(e.code, .malformedModel, "\(label): \(e)")
                XCTAssert(e.message.hasPrefix(label), "the message names the model: \(e.message)")
            }
        }
        XCTAssertThrowsError(try ModelQuantizer.quantizeFile(at: "/nonexistent/model.onnx", to: workDir.appendingPathComponent("x.onnx").path,
                                                             mode: .fp16)) { error in
            XCTAssertEqual((error as? QuantizationError)?.code, .io)
        }
        XCTAssertThrowsError(try QuantizationMode(name: "int8-kmeans", bits: 9)) { error in
            XCTAssertEqual((error as? QuantizationError)?.code, .invalidArgument)
        }
    }
}
