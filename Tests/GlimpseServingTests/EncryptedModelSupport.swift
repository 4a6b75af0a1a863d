import Foundation
@testable import GlimpseServing
import GlimpseTestSupport
import XCTest

/// A model folder with the repository's small digits model, plain and encrypted.
struct EncryptedModelFixture {
    static let plainName = "digits-small.onnx"
    let folder: TemporaryFolder
    /// The model's bytes with a `doc_string` field (ModelProto field 6) appended that holds `marker`,
    /// so this test's plaintext is told apart from any other copy of the model on the machine.
    let plaintext: [UInt8]
    let marker: [UInt8]
    let keyring: ModelKeyring

    /// Two keys, `old` and `new` (rotation), with fixed bytes.
    static func twoKeys() throws -> ModelKeyring {
        var keyring = ModelKeyring()
        try keyring.add(id: "old", key: (0..<32).map { UInt8($0) })
        try keyring.add(id: "new", key: (0..<32).map { UInt8(200 - $0) })
        return keyring
    }

    init(_ test: XCTestCase, keyring: ModelKeyring? = nil) throws {
        folder = try test.temporaryFolder("encrypted-models")
        let source = SharedData.repoRoot.appendingPathComponent("models").appendingPathComponent(Self.plainName).path
        guard let data = FileManager.default.contents(atPath: source) else { throw SharedDataMissing(path: source) }
        marker = Array("glimpse encrypted-model test \(UUID().uuidString)".utf8)
        plaintext = [UInt8](data) + [0x32, UInt8(marker.count)] + marker
        self.keyring = try keyring ?? Self.twoKeys()
    }

    var path: String { folder.path }

    /// Writes the plain model as `<name>.onnx` with its sidecar.
    func writePlain(as name: String, version: String = "1") throws {
        try Data(plaintext).write(to: folder.appending(name + ".onnx"))
        try writeSidecar(name, version: version)
    }

    /// Writes `<name>.onnx.enc`, encrypted with key `keyID`, with its sidecar; returns the bytes.
    @discardableResult
    func writeEncrypted(as name: String, keyID: String = "new", keyring: ModelKeyring? = nil, version: String = "1") throws -> [UInt8] {
        let sealed = try EncryptedModelFile.seal(plaintext, name: name + ".onnx", keyID: keyID, keyring: keyring ?? self.keyring)
        try Data(sealed).write(to: folder.appending(name + ".onnx.enc"))
        try writeSidecar(name, version: version)
        return sealed
    }

    func writeSidecar(_ name: String, version: String) throws {
        let json = #"{"preprocessing": "mnist", "family": "\#(name)", "variant": "\#(name)", "version": "\#(version)"}"#
        try Data(json.utf8).write(to: folder.appending(name + ".json"))
    }

    func service(keys: ModelKeyring? = nil) -> InferenceService {
        var configuration = ServingConfiguration(decodeThreads: 1, engineThreads: 1)
        configuration.modelKeys = keys ?? keyring
        return InferenceService(configuration: configuration)
    }

    /// The scores of a fixed pseudo-random input through `model`.
    static func scores(_ service: InferenceService, model: String) async throws -> [Float] {
        let loaded = try XCTUnwrap(service.registry.model(named: model))
        let shape = loaded.queue.itemShape
        var random = TestRandom(seed: 7)
        var request = ClassifyRequest(images: [], model: model, topK: 3)
        request.pixels = [random.floats(shape.reduce(1, *))]
        request.pixelShape = shape
        let results = try await service.classify(request)
        return results[0].scores
    }
}

/// The message of a load that must fail.
func loadError(_ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) -> String {
    do {
        try body()
        XCTFail("the load succeeded", file: file, line: line)
        return ""
    } catch {
        return "\(error)"
    }
}
