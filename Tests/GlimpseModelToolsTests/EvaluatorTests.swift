import Foundation
import GlimpseTestSupport
import XCTest

@testable import GlimpseModelTools
import GlimpseServing

/// Accuracy measured through the classify path: mnist-8 on the MNIST test set, and on labelled
/// digit photos in a folder; label matching rules.
final class EvaluatorTests: XCTestCase {
    var folder: URL!

    override func setUpWithError() throws {
        folder = try temporaryFolder("eval").url
    }

    func mnistModel(_ service: InferenceService) throws -> LoadedModel {
        try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent("mnist-8.onnx").path,
                                                   withDestinationPath: try SharedData.path("models/mnist-8.onnx"))
        try #"{"preprocessing": "mnist"}"#.write(to: folder.appendingPathComponent("mnist-8.json"), atomically: true, encoding: .utf8)
        return try service.registry.load(named: "mnist-8", directory: folder.path)
    }

    func testMNIST8OnTheFirst500TestImages() throws {
        let service = InferenceService(configuration: .init(engineThreads: 1))
        defer { service.shutdown() }
        let model = try mnistModel(service)
        let samples = try EvalDataset.load(try SharedData.path("datasets/mnist/t10k-images-idx3-ubyte.gz"), limit: 500).samples
        let report = try Evaluator.run(model: model, samples: samples, batch: 8)
        // mnist-8 declares a batch of 1; the registry widens it (checked against single runs at load).
        XCTAssertTrue(model.model.widenedBatch)
        XCTAssertEqual(report.batch, 8)
        XCTAssertEqual(report.evaluated, 500)
        XCTAssertEqual(report.failed, 0)
        XCTAssertTrue(report.unmappedLabels.isEmpty)
        // onnxruntime 1.31 on the same 500 raw images: top-1 493 (98.6%), top-5 500; 9891/10000 on the whole set.
        XCTAssertGreaterThanOrEqual(report.top1, 490, "top-1 \(report.top1)/500")
        XCTAssertGreaterThanOrEqual(report.top5, report.top1)
        XCTAssertEqual(report.top5, 500)
        print("mnist-8 first 500: top-1 \(report.top1)/500, top-5 \(report.top5)/500, \(Int(report.imagesPerSecond)) images/s")
    }

    func testFolderOfDigitPhotos() throws {
        let service = InferenceService(configuration: .init(engineThreads: 1))
        defer { service.shutdown() }
        let model = try mnistModel(service)
        let data = folder.appendingPathComponent("digits")
        for d in 0..<10 {
            let dst = data.appendingPathComponent("\(d)")
            try FileManager.default.createDirectory(at: dst, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: try SharedData.path("images/digits/torchserve_\(d).png"),
                                             toPath: dst.appendingPathComponent("torchserve.png").path)
        }
        try Data("not an image".utf8).write(to: data.appendingPathComponent("4/broken.png"))
        let samples = try EvalDataset.load(data.path).samples
        XCTAssertEqual(samples.count, 11)
        let report = try Evaluator.run(model: model, samples: samples)
        XCTAssertEqual(report.evaluated, 10)
        XCTAssertEqual(report.failed, 1)
        XCTAssertTrue(report.failures[0].contains("broken.png"), report.failures[0])
        XCTAssertGreaterThanOrEqual(report.top1, 9, "top-1 \(report.top1)/10")
    }

    func testTopIndicesRankRawScores() {
        XCTAssertEqual(Evaluator.topIndices([0.1, 5, -3, 5, 2, .nan, 9], k: 3), [6, 1, 3])
        XCTAssertEqual(Evaluator.topIndices([1, 2], k: 5), [1, 0])
        // Logits far apart: softmax would make the tail all 0, the raw order still ranks them.
        XCTAssertEqual(Evaluator.topIndices([-900, 100, -800, -700, -950, -600], k: 5), [1, 5, 3, 2, 0])
    }

    func testLabelMatching() {
        let imagenet = ["tench", "great white shark", "tabby", "Egyptian cat"]
        XCTAssertEqual(Evaluator.labelIndex("Tabby", labels: imagenet, classes: 4), 2)
        XCTAssertEqual(Evaluator.labelIndex("great_white_shark", labels: imagenet, classes: 4), 1)
        XCTAssertEqual(Evaluator.labelIndex("egyptian cat", labels: imagenet, classes: 4), 3)
        XCTAssertNil(Evaluator.labelIndex("airplane", labels: imagenet, classes: 4))
        XCTAssertNil(Evaluator.labelIndex("2", labels: imagenet, classes: 4), "digits only index models whose labels are numbers")
        XCTAssertEqual(Evaluator.labelIndex("7", labels: [], classes: 10), 7)
        XCTAssertNil(Evaluator.labelIndex("12", labels: [], classes: 10))
        XCTAssertEqual(Evaluator.labelIndex("3", labels: (0..<10).map(String.init), classes: 10), 3)
    }

    func testDataSetWhoseLabelsTheModelDoesNotKnow() throws {
        let service = InferenceService(configuration: .init(engineThreads: 1))
        defer { service.shutdown() }
        let model = try mnistModel(service)
        let samples = [EvalSample(label: "airplane", image: .pixels(Array(repeating: 0, count: 784), width: 28, height: 28, channels: 1), source: "x")]
        XCTAssertThrowsError(try Evaluator.run(model: model, samples: samples)) { XCTAssertTrue("\($0)".contains("airplane"), "\($0)") }
    }
}
