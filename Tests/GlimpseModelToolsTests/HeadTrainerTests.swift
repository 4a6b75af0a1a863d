import Foundation
import GlimpseImage
import GlimpseONNX
@testable import GlimpseQuantize
import GlimpseServing
import GlimpseTensor
import GlimpseTestSupport
import XCTest

@testable import GlimpseModelTools

/// `glimpse train` end to end on CIFAR-10 images: features from an fp32 base whose classifier is a
/// convolution (squeezenet1.1: pooled) and from an int8 one whose classifier is a QLinearMatMul
/// (mobilenetv2-12-int8: dequantized), a head trained on them, the file written with its sidecar,
/// loaded by the registry, and run by onnxruntime with the same probabilities.
final class HeadTrainerTests: XCTestCase {
    var folder: URL!
    let models = SharedData.repoRoot.appendingPathComponent("models").path

    override func setUpWithError() throws {
        folder = try temporaryFolder("train").url
    }

    /// The first `perClass` training images of each of `classes`.
    func samples(_ classes: Set<String>, perClass: Int) throws -> [EvalSample] {
        let all = try EvalDataset.load(try SharedData.path("datasets/cifar10-jpeg/train.tar")).samples
        return BaseModel.firstPerLabel(all.filter { classes.contains($0.label) }, limit: perClass)
    }

    func train(base: String, classes: Set<String>, perClass: Int) throws -> (HeadTrainer.Outcome, ModelMetadata, [EvalSample]) {
        let (bytes, metadata, _) = try BaseModel.read(named: base, directory: models, keyring: ModelKeyring())
        let data = try samples(classes, perClass: perClass)
        var options = HeadTrainer.Options()
        options.validationFraction = 0.25
        options.threads = 2
        options.augmentation = base == "squeezenet1.1" ? [.mirror, .zoom] : []
        options.training.hidden = base == "squeezenet1.1" ? 0 : 16
        options.training.l2 = [0.1, 0.01]
        var events = 0
        let outcome = try HeadTrainer(options: options).train(samples: data, validation: nil, base: bytes, baseName: base,
                                                              preprocessing: metadata.preprocessing) { _ in events += 1 }
        XCTAssertGreaterThan(events, 4)
        XCTAssertEqual(outcome.labels, classes.sorted())
        XCTAssertEqual(outcome.trainImages + outcome.validationImages, data.count)
        XCTAssertEqual(outcome.trainExamples, outcome.trainImages * (base == "squeezenet1.1" ? 4 : 1))
        XCTAssertEqual(outcome.validationImages, classes.count * perClass / 4)
        XCTAssertEqual(outcome.report?.total, outcome.validationImages)
        XCTAssertTrue(outcome.failures.isEmpty, "\(outcome.failures)")
        return (outcome, metadata, data)
    }

    func testSqueezeNetBaseIsPooledAndOnnxruntimeAgrees() throws {
        let (outcome, metadata, data) = try train(base: "squeezenet1.1", classes: ["airplane", "frog", "truck"], perClass: 8)
        XCTAssertEqual(outcome.features, 512)
        XCTAssertTrue(outcome.featurePath.contains("GlobalAveragePool"), outcome.featurePath)
        try checkWrittenModel(outcome, preprocessing: metadata.preprocessing, images: Array(data.prefix(5)))
    }

    /// With a hidden layer too (Gemm, Relu, Gemm, Softmax in the file).
    func testInt8MobileNetBaseIsDequantizedAndOnnxruntimeAgrees() throws {
        let (outcome, metadata, data) = try train(base: "mobilenetv2-12-int8", classes: ["cat", "ship"], perClass: 8)
        XCTAssertEqual(outcome.features, 1280)
        XCTAssertTrue(outcome.featurePath.hasPrefix("472_quantized"), outcome.featurePath)
        XCTAssertTrue(outcome.featurePath.contains("DequantizeLinear"), outcome.featurePath)
        XCTAssertEqual(outcome.result.hiddenLayer?.bias.count, 16)
        XCTAssertNotNil(Data(outcome.model).range(of: Data("glimpse_hidden_relu".utf8)))
        try checkWrittenModel(outcome, preprocessing: metadata.preprocessing, images: Array(data.suffix(5)))
    }

    /// Writes the model, loads it as a server would, and compares Glimpse's probabilities with onnxruntime's.
    func checkWrittenModel(_ outcome: HeadTrainer.Outcome, preprocessing: Preprocessing, images: [EvalSample]) throws {
        let path = folder.appendingPathComponent("head.onnx").path
        try TrainedModelFiles.write(outcome, to: path, family: "things", preprocessing: preprocessing, accuracyDataset: nil)
        let service = InferenceService(configuration: .init(engineThreads: 1))
        defer { service.shutdown() }
        let loaded = try service.registry.load(named: "head", directory: folder.path)
        XCTAssertEqual(loaded.metadata.family, "things")
        XCTAssertEqual(loaded.labels, outcome.labels)
        XCTAssertEqual(loaded.metadata.preprocessing, preprocessing)
        XCTAssertEqual(loaded.metadata.accuracy ?? -1, (outcome.report?.accuracy ?? -2), accuracy: 1e-4)

        let input = Tensor(shape: Shape([images.count, 3, preprocessing.height, preprocessing.width]), dtype: .float32)
        for (i, image) in images.enumerated() {
            try Evaluator.preprocess(image, spec: preprocessing, into: input.rawPointer + i * preprocessing.byteCount)
        }
        let glimpse = try ONNXLoader.load(path: path).run([input])[0].floats()
        let ort = try Onnxruntime.run(model: path, input: input, folder: folder)
        XCTAssertEqual(glimpse.count, images.count * outcome.labels.count)
        XCTAssertEqual(ort.count, glimpse.count)
        let diff = zip(glimpse, ort).map { abs($0 - $1) }.max() ?? .infinity
        XCTAssertLessThanOrEqual(diff, 1e-4, "max |Δp| between Glimpse and onnxruntime")
        print("\(outcome.featurePath): max |Δp| Glimpse vs onnxruntime \(diff) over \(images.count) images × \(outcome.labels.count) classes")
        for i in images.indices {
            XCTAssertEqual(glimpse[(i * outcome.labels.count)..<((i + 1) * outcome.labels.count)].reduce(0, +), 1, accuracy: 1e-4)
        }
    }

    func testNamedFeatureTensorThatDoesNotExistIsAClearError() throws {
        let (bytes, _, _) = try BaseModel.read(named: "squeezenet1.1", directory: models, keyring: ModelKeyring())
        XCTAssertThrowsError(try ClassifierGraft(base: bytes, name: "squeezenet1.1", featureTensor: "no_such_tensor")) {
            XCTAssertTrue("\($0)".contains("no_such_tensor"), "\($0)")
        }
        XCTAssertThrowsError(try ONNXLoader.load(bytes: bytes, name: "squeezenet1.1", outputs: ["no_such_tensor"])) {
            XCTAssertTrue("\($0)".contains("no computed tensor 'no_such_tensor'"), "\($0)")
        }
        XCTAssertThrowsError(try BaseModel.read(named: "nope", directory: models, keyring: ModelKeyring())) {
            XCTAssertTrue("\($0)".contains("no model \"nope\""), "\($0)")
        }
    }

    /// A file whose initializers come before its nodes (field order is free in protobuf) grafts the
    /// same model: the kept nodes are matched by their place in the graph, not by their index.
    func testGraftDoesNotDependOnTheOrderOfGraphFields() throws {
        let (bytes, _, _) = try BaseModel.read(named: "squeezenet1.1", directory: models, keyring: ModelKeyring())
        let file = try ONNXModelFile(bytes: bytes, name: "squeezenet1.1")
        var graph = ProtoWriter()
        for f in file.graphFields where f.number == 5 { graph.raw(file.scanner.bytes[f.span]) }
        for f in file.graphFields where f.number != 5 { graph.raw(file.scanner.bytes[f.span]) }
        let reordered = file.model(graph: graph, metadata: [])
        let head = ClassifierGraft.Head(classes: 2, features: 512, weights: (0..<1024).map { Float($0 % 7) * 0.01 }, bias: [0.1, -0.1])
        let a = try ClassifierGraft(base: bytes, name: "a").model(head: head)
        let b = try ClassifierGraft(base: reordered, name: "b").model(head: head)
        let input = Tensor(shape: Shape([1, 3, 224, 224]), dtype: .float32)
        for i in 0..<input.count { input.pointer(as: Float.self)[i] = Float(i % 255) / 255 - 0.5 }
        let pa = try ONNXLoader.load(bytes: a, name: "a").run([input])[0].floats()
        let pb = try ONNXLoader.load(bytes: b, name: "b").run([input])[0].floats()
        XCTAssertEqual(pa, pb)
        XCTAssertLessThan(b.count, reordered.count, "the original classifier's weights are left out")
    }

    func testOneClassIsRefused() throws {
        let (bytes, metadata, _) = try BaseModel.read(named: "squeezenet1.1", directory: models, keyring: ModelKeyring())
        let data = try samples(["cat"], perClass: 3)
        XCTAssertThrowsError(try HeadTrainer(options: .init()).train(samples: data, validation: nil, base: bytes, baseName: "squeezenet1.1",
                                                                     preprocessing: metadata.preprocessing)) {
            XCTAssertTrue("\($0)".contains("at least two classes"), "\($0)")
        }
    }

    /// An encrypted base gives an encrypted model, sealed with the base's key, and no plaintext on disk.
    func testEncryptedBaseGivesAnEncryptedModel() throws {
        var keyring = ModelKeyring()
        try keyring.add(id: "k1", key: (0..<32).map { UInt8(7 * $0 + 1) })
        let plain = try [UInt8](Data(contentsOf: URL(fileURLWithPath: models).appendingPathComponent("cifar10-small.onnx")))
        let sealed = try EncryptedModelFile.seal(plain, name: "base.onnx", keyID: "k1", keyring: keyring)
        try Data(sealed).write(to: folder.appendingPathComponent("base.onnx.enc"))
        let sidecar = #"{"preprocessing": {"width": 32, "height": 32, "mean": [0.4914, 0.4822, 0.4465], "std": [0.247, 0.2435, 0.2616]}}"#
        try Data(sidecar.utf8).write(to: folder.appendingPathComponent("base.json"))

        let (bytes, metadata, keyID) = try BaseModel.read(named: "base", directory: folder.path, keyring: keyring)
        XCTAssertEqual(bytes, plain)
        XCTAssertEqual(keyID, "k1")
        var options = HeadTrainer.Options()
        options.training.l2 = [0.01]
        let outcome = try HeadTrainer(options: options).train(samples: try samples(["deer", "horse"], perClass: 6), validation: nil,
                                                              base: bytes, baseName: "base", preprocessing: metadata.preprocessing)
        let written = try TrainedModelFiles.write(outcome, to: folder.appendingPathComponent("head.onnx").path, family: "animals",
                                                  preprocessing: metadata.preprocessing, accuracyDataset: nil, sealWith: keyID, keyring: keyring)
        XCTAssertEqual(written.first.map { ($0 as NSString).lastPathComponent }, "head.onnx.enc")
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder.appendingPathComponent("head.onnx").path))
        let onDisk = try Data(contentsOf: folder.appendingPathComponent("head.onnx.enc"))
        XCTAssertNil(onDisk.range(of: Data("glimpse_head_gemm".utf8)), "the model's graph is readable on disk")
        XCTAssertEqual(try EncryptedModelFile.header([UInt8](onDisk)).keyID, "k1")

        var configuration = ServingConfiguration(engineThreads: 1)
        configuration.modelKeys = keyring
        let service = InferenceService(configuration: configuration)
        defer { service.shutdown() }
        let loaded = try service.registry.load(named: "head", directory: folder.path)
        XCTAssertEqual(loaded.labels, ["deer", "horse"])
        XCTAssertThrowsError(try InferenceService(configuration: .init(engineThreads: 1)).registry.load(named: "head", directory: folder.path))
    }

    func testMirrorReversesEachRowOfEachPlane() {
        let spec = Preprocessing(width: 3, height: 2, crop: .center, channelOrder: .rgb, layout: .nchw)
        let source = (0..<18).map(Float.init)
        var out = [Float](repeating: -1, count: 18)
        var input = source
        input.withUnsafeMutableBytes { s in out.withUnsafeMutableBytes { d in Mirror.copyFlipped(s.baseAddress!, into: d.baseAddress!, spec: spec) } }
        XCTAssertEqual(out, [2, 1, 0, 5, 4, 3, 8, 7, 6, 11, 10, 9, 14, 13, 12, 17, 16, 15])
    }
}
