import Foundation
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// The `glimpse` commands around model files, run as a user runs them: keygen, encrypt and decrypt,
/// the GLIMPSE_MODEL_KEY_FILE variable, quantize of an encrypted model, and train.
final class ModelCommandsTests: XCTestCase {
    var folder: URL!
    let models = SharedData.repoRoot.appendingPathComponent("models")

    override func setUpWithError() throws {
        folder = try temporaryFolder("commands").url
    }

    /// Runs `glimpse ARGUMENTS` in the test folder (bounded to 5 minutes); returns the exit status and stdout+stderr.
    func glimpse(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = GlimpseProcess.binary
        process.arguments = arguments
        process.currentDirectoryURL = folder
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "GLIMPSE_MODEL_KEY_FILE")
        env.merge(environment) { $1 }
        process.environment = env
        let out = folder.appendingPathComponent("output-\(UUID().uuidString).txt")
        FileManager.default.createFile(atPath: out.path, contents: nil)
        let handle = try FileHandle(forWritingTo: out)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let deadline = Date().addingTimeInterval(300)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try handle.close()
        return (process.terminationStatus, (try? String(contentsOf: out, encoding: .utf8)) ?? "")
    }

    func testKeygenEncryptDecryptRoundTrip() throws {
        let plain = try Data(contentsOf: models.appendingPathComponent("digits-small.onnx"))
        try plain.write(to: folder.appendingPathComponent("digits-small.onnx"))
        let keygen = try glimpse(["models", "keygen", "--out", "model.key", "--id", "prod-1"])
        XCTAssertEqual(keygen.status, 0, keygen.output)
        let mode = try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent("model.key").path)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
        let again = try glimpse(["models", "keygen", "--out", "model.key"])
        XCTAssertNotEqual(again.status, 0)
        XCTAssertTrue(again.output.contains("not overwritten"), again.output)

        let encrypt = try glimpse(["models", "encrypt", "digits-small.onnx", "--key-file", "model.key"])
        XCTAssertEqual(encrypt.status, 0, encrypt.output)
        let sealed = try Data(contentsOf: folder.appendingPathComponent("digits-small.onnx.enc"))
        XCTAssertEqual(Array(sealed.prefix(8)), Array("GLMPENC1".utf8))
        XCTAssertNil(sealed.range(of: plain.suffix(64)), "ciphertext holds the plaintext")

        let decrypt = try glimpse(["models", "decrypt", "digits-small.onnx.enc", "--key-file", "model.key", "--out", "back.onnx"])
        XCTAssertEqual(decrypt.status, 0, decrypt.output)
        XCTAssertEqual(try Data(contentsOf: folder.appendingPathComponent("back.onnx")), plain)
    }

    /// `models list` finds the key through GLIMPSE_MODEL_KEY_FILE, and names the missing key without it;
    /// `quantize` of the encrypted model writes only an encrypted variant.
    func testKeyFileVariableAndEncryptedQuantize() throws {
        let plain = try Data(contentsOf: models.appendingPathComponent("digits-large.onnx"))
        try plain.write(to: folder.appendingPathComponent("source.onnx"))
        XCTAssertEqual(try glimpse(["models", "keygen", "--out", "k.key", "--id", "k1"]).status, 0)
        let library = folder.appendingPathComponent("library")
        try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
        XCTAssertEqual(try glimpse(["models", "encrypt", "source.onnx", "--key-file", "k.key", "--out", "library/digits.onnx.enc"]).status, 0)
        try FileManager.default.removeItem(at: folder.appendingPathComponent("source.onnx"))
        for name in ["digits", "digits-int8-linear"] {
            try Data(#"{"preprocessing": "mnist", "family": "digits"}"#.utf8).write(to: library.appendingPathComponent("\(name).json"))
        }

        let without = try glimpse(["models", "list", "--models", "library"])
        XCTAssertTrue(without.output.contains("not loaded") && without.output.contains("no model key was given"), without.output)
        let with = try glimpse(["models", "list", "--models", "library"], environment: ["GLIMPSE_MODEL_KEY_FILE": "k.key"])
        XCTAssertEqual(with.status, 0, with.output)
        XCTAssertTrue(with.output.contains("digits\tfamily=digits"), with.output)

        let quantize = try glimpse(["quantize", "library/digits.onnx.enc", "--mode", "int8-linear", "--out", "library/digits-int8-linear.onnx.enc"],
                                   environment: ["GLIMPSE_MODEL_KEY_FILE": "k.key"])
        XCTAssertEqual(quantize.status, 0, quantize.output)
        XCTAssertTrue(quantize.output.contains("encrypted with key k1"), quantize.output)
        let files = try FileManager.default.contentsOfDirectory(atPath: library.path)
        XCTAssertFalse(files.contains { $0.hasSuffix(".onnx") }, "a plaintext model was written: \(files)")
        let both = try glimpse(["models", "list", "--models", "library", "--model-key-file", "k.key"])
        XCTAssertTrue(both.output.contains("digits-int8-linear\tfamily=digits"), both.output)
        XCTAssertFalse(both.output.contains("not loaded"), both.output)
    }

    func testTrainPrintsItsReportAndWritesALoadableModel() throws {
        let tar = try SharedData.path("datasets/cifar10-jpeg/train.tar")
        let run = try glimpse(["train", tar, "--base", "squeezenet1.1", "--models", models.path, "--per-class-limit", "3",
                               "--out", "out/tiny.onnx", "--family", "tiny", "--threads", "2"])
        XCTAssertEqual(run.status, 0, run.output)
        for expected in ["30 images, 10 classes", "features: 512 values", "validation accuracy", "confusion matrix", "precision", "total "] {
            XCTAssertTrue(run.output.contains(expected), "missing \"\(expected)\" in: \(run.output)")
        }
        let list = try glimpse(["models", "list", "--models", "out"])
        XCTAssertTrue(list.output.contains("tiny\tfamily=tiny"), list.output)
        XCTAssertTrue(list.output.contains("labels=10"), list.output)
    }

    /// The README's loop: a server is running; a model is trained into its folder, loaded with
    /// `models.load` over /rpc (curl, h2c), and classifies.
    func testTrainedModelIsPickedUpByARunningServer() throws {
        let served = folder.appendingPathComponent("served")
        try FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
        try Data(contentsOf: models.appendingPathComponent("digits-small.onnx")).write(to: served.appendingPathComponent("digits-small.onnx"))
        try Data(#"{"preprocessing": "mnist", "family": "digits"}"#.utf8).write(to: served.appendingPathComponent("digits-small.json"))
        let server = try GlimpseProcess(arguments: ["--models", served.path, "--admin-without-auth", "--threads", "1"])
        defer { server.stop() }

        let tar = try SharedData.path("datasets/cifar10-jpeg/train.tar")
        let run = try glimpse(["train", tar, "--base", "squeezenet1.1", "--models", models.path, "--per-class-limit", "2",
                               "--validation", "0", "--out", "served/pets.onnx", "--family", "pets", "--threads", "1"])
        XCTAssertEqual(run.status, 0, run.output)
        func rpc(_ method: String, _ params: String) throws -> String {
            let body = Data(#"{"jsonrpc":"2.0","id":1,"method":"\#(method)","params":\#(params)}"#.utf8)
            let reply = try ExternalClient.curl(server.base + "/rpc", body: body)
            XCTAssertEqual(reply.status, 200)
            return String(decoding: reply.body, as: UTF8.self)
        }
        let load = try rpc("models.load", #"{"model":"pets"}"#)
        XCTAssertTrue(load.contains("\"result\""), load)
        let image = try Data(contentsOf: URL(fileURLWithPath: try SharedData.path("images/imagenet/kitten_small.jpg"))).base64EncodedString()
        let answer = try rpc("classify", #"{"model":"pets","top_k":10,"image":"\#(image)"}"#)
        XCTAssertTrue(answer.contains("\"variant\":\"pets\""), answer)
        for label in ["airplane", "cat", "truck"] { XCTAssertTrue(answer.contains("\"label\":\"\(label)\""), answer) }
    }
}

/// The README's encryption flow in a folder described by `models.json`: encrypt a model, remove the plain
/// file as one would, and the manifest's entry serves the encrypted twin.
final class EncryptedManifestFlowTests: XCTestCase {
    func testEncryptingAManifestModelAndRemovingThePlainFileKeepsItServable() throws {
        let dir = try temporaryFolder("encrypt-manifest").url
        let source = SharedData.repoRoot.appendingPathComponent("models/digits-small.onnx")
        try FileManager.default.copyItem(at: source, to: dir.appendingPathComponent("digits-small.onnx"))
        // The shipped manifest's own entry for the model, its labels file beside it.
        let shipped = try JSONValue.parse([UInt8](try Data(contentsOf: SharedData.repoRoot.appendingPathComponent("models/models.json"))))
        let entry = try XCTUnwrap(shipped["models"]?["digits-small"])
        try Data(JSONValue.object(["models": .object(["digits-small": entry])]).serialized()).write(to: dir.appendingPathComponent("models.json"))
        try FileManager.default.copyItem(at: SharedData.repoRoot.appendingPathComponent("models/digits.labels.txt"),
                                         to: dir.appendingPathComponent("digits.labels.txt"))
        let binary = GlimpseProcess.binary.path
        let keygen = try ChildProcess.run(binary, ["models", "keygen", "--out", "model.key"], timeLimit: 60, currentDirectory: dir)
        XCTAssertEqual(keygen.status, 0, keygen.log)
        let encrypt = try ChildProcess.run(binary, ["models", "encrypt", "digits-small.onnx", "--key-file", "model.key"], timeLimit: 60,
                                           currentDirectory: dir)
        XCTAssertEqual(encrypt.status, 0, encrypt.log)
        try FileManager.default.removeItem(at: dir.appendingPathComponent("digits-small.onnx"))

        let key = dir.appendingPathComponent("model.key").path
        let server = try GlimpseProcess(arguments: ["--models", dir.path, "--model-key-file", key, "--threads", "1"])
        defer { server.stop() }
        XCTAssertFalse(server.log.contains("no metadata"), String(server.log.suffix(2000)))
        let reply = try ExternalClient.curl(server.base + "/rpc", body: RPC.classifyBody(image: try SharedData.data("images/digits/torchserve_6.png"),
                                                                                         model: "digits-small"))
        let json = try JSONValue.parse([UInt8](reply.body))
        XCTAssertEqual(reply.status, 200)
        XCTAssertEqual(json["result"]?["predictions"]?[0]?["label"]?.stringValue, "6", String(decoding: reply.body.prefix(400), as: UTF8.self))
        XCTAssertEqual(json["result"]?["variant"]?.stringValue, "small", "the manifest entry's variant, served from the encrypted file")
    }
}
