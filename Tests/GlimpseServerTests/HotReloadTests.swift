import Foundation
import GlimpseLoad
import GlimpseRPC
import GlimpseServing
import GlimpseTestSupport
import XCTest

/// `models.reload` (and `models.load`) replace a running model without failing a request, and refuse a
/// corrupt file while the old version keeps serving.
final class HotReloadTests: XCTestCase {
    func folderWithCopiedMNIST() throws -> URL {
        let dir = try temporaryFolder("reload").url
        try FileManager.default.copyItem(atPath: try SharedData.path("models/mnist-8.onnx"), toPath: dir.appendingPathComponent("mnist-8.onnx").path)
        try #"{"preprocessing": "mnist", "family": "digits", "variant": "mnist-8", "version": "1"}"#
            .write(to: dir.appendingPathComponent("mnist-8.json"), atomically: true, encoding: .utf8)
        return dir
    }

    func reload(_ server: GlimpseProcess, model: String = "mnist-8", method: String = "models.reload") throws -> JSONValue {
        let body = #"{"jsonrpc":"2.0","id":9,"method":"\#(method)","params":{"model":"\#(model)"}}"#
        let reply = try ExternalClient.curl(server.base + "/rpc", body: Data(body.utf8))
        return try JSONValue.parse([UInt8](reply.body))
    }

    func testReloadUnderSteadyLoadFailsNoRequest() async throws {
        let dir = try folderWithCopiedMNIST()
        let server = try GlimpseProcess(arguments: ["--models", dir.path, "--admin-without-auth"])
        defer { server.stop() }
        let client = try H2Client(host: "127.0.0.1", port: server.port, requestTimeout: 30)
        defer { client.close() }
        let body = [UInt8](RPC.classifyBody(image: try SharedData.data("images/digits/torchserve_6.png"), model: "mnist-8"))
        let stop = Date().addingTimeInterval(TestTime.seconds(4))
        async let load: [Int] = withTaskGroup(of: [Int].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var codes: [Int] = []
                    while Date() < stop && codes.count < 5000 {
                        guard let r = try? await client.post(path: "/rpc", headers: [("content-type", "application/json")], body: body),
                              let json = try? JSONValue.parse(r.body) else { codes.append(-1); continue }
                        if json["result"]?["predictions"]?[0]?["label"]?.stringValue == "6" { codes.append(0) } else {
                            codes.append(json["error"]?["code"]?.intValue ?? -2)
                        }
                    }
                    return codes
                }
            }
            var all: [Int] = []
            for await c in group { all += c }
            return all
        }
        var reloads = 0
        while Date() < stop.addingTimeInterval(-0.5) {
            try await Task.sleep(nanoseconds: 400_000_000)
            let reply = try reload(server, method: reloads % 2 == 0 ? "models.reload" : "models.load")
            XCTAssertEqual(reply["result"]?["name"]?.stringValue, "mnist-8", reply.jsonString)
            reloads += 1
        }
        // Reload is for loaded models only: a name that is not loaded is an invalid parameter.
        let unknown = try reload(server, model: "not-loaded")
        XCTAssertEqual(unknown["error"]?["code"]?.intValue, -32602, unknown.jsonString)
        XCTAssertEqual(unknown["error"]?["data"]?["reason"]?.stringValue, "unknown_model", unknown.jsonString)
        let codes = await load
        XCTAssertGreaterThanOrEqual(reloads, 5)
        XCTAssertGreaterThan(codes.count, 100, "steady load must have run")
        XCTAssertEqual(codes.filter { $0 != 0 }.count, 0, "failed requests during \(reloads) reloads: \(Dictionary(grouping: codes.filter { $0 != 0 }, by: { $0 }).mapValues(\.count))")
        XCTAssertTrue(server.log.contains("loaded model"))
        client.close()
        let started = Date()
        XCTAssertEqual(server.stop(timeout: 20), 0, "clean exit after the reloads")
        XCTAssertLessThan(Date().timeIntervalSince(started), TestTime.seconds(10))
    }

    func testCorruptReplacementIsRefusedAndTheOldVersionKeepsServing() throws {
        let dir = try folderWithCopiedMNIST()
        let server = try GlimpseProcess(arguments: ["--models", dir.path, "--admin-without-auth"])
        defer { server.stop() }
        let file = dir.appendingPathComponent("mnist-8.onnx")
        var bytes = try Data(contentsOf: file)
        bytes = bytes.prefix(bytes.count / 3)  // truncated upload
        try bytes.write(to: file)
        let reply = try reload(server)
        XCTAssertEqual(reply["error"]?["code"]?.intValue, -32002, reply.jsonString)
        XCTAssertFalse(reply.jsonString.contains(dir.path), "no server paths in the error")
        let ok = try ExternalClient.curl(server.base + "/rpc", body: RPC.classifyBody(image: try SharedData.data("images/digits/torchserve_6.png"), model: "mnist-8"))
        XCTAssertEqual(try JSONValue.parse([UInt8](ok.body))["result"]?["predictions"]?[0]?["label"]?.stringValue, "6")
    }

    /// A bit flipped in the weights still parses: only a checksum tells. With `sha256` in the metadata,
    /// the reload is refused, the error names the model, both hashes and no path, and the loaded
    /// version keeps serving.
    func testBitFlippedReplacementIsRefusedByTheChecksumInItsMetadata() throws {
        let dir = try folderWithCopiedMNIST()
        try #"{"preprocessing": "mnist", "sha256": "2f06e72de813a8635c9bc0397ac447a601bdbfa7df4bebc278723b958831c9bf"}"#
            .write(to: dir.appendingPathComponent("mnist-8.json"), atomically: true, encoding: .utf8)
        let server = try GlimpseProcess(arguments: ["--models", dir.path, "--admin-without-auth"])
        defer { server.stop() }
        let file = dir.appendingPathComponent("mnist-8.onnx")
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count / 2] ^= 0x10
        try bytes.write(to: file)
        let reply = try reload(server)
        XCTAssertEqual(reply["error"]?["code"]?.intValue, -32002, reply.jsonString)
        let message = reply["error"]?["message"]?.stringValue ?? ""
        XCTAssertTrue(message.contains("mnist-8") && message.contains("sha256")
                      && message.contains("2f06e72de813a8635c9bc0397ac447a601bdbfa7df4bebc278723b958831c9bf"), reply.jsonString)
        XCTAssertFalse(reply.jsonString.contains(dir.path), "no server paths in the error")
        let ok = try ExternalClient.curl(server.base + "/rpc", body: RPC.classifyBody(image: try SharedData.data("images/digits/torchserve_6.png"), model: "mnist-8"))
        XCTAssertEqual(try JSONValue.parse([UInt8](ok.body))["result"]?["predictions"]?[0]?["label"]?.stringValue, "6")
    }
}

/// An encrypted model (`*.onnx.enc`) served with `--model-key-file`: a tampered replacement is refused
/// by `models.reload` with -32002 naming the file and the reason, and the loaded version keeps serving.
final class EncryptedReloadTests: XCTestCase {
    func testTamperedEncryptedReplacementIsRefused() throws {
        let dir = try temporaryFolder("encrypted-reload").url
        let key = (0..<32).map { UInt8(($0 * 37 + 11) & 0xff) }
        let keyFile = dir.appendingPathComponent("model.key")
        try Data("srv-1 \(Data(key).base64EncodedString())\n".utf8).write(to: keyFile)
        var keyring = ModelKeyring()
        try keyring.add(id: "srv-1", key: key)
        let models = dir.appendingPathComponent("models")
        try FileManager.default.createDirectory(at: models, withIntermediateDirectories: true)
        let sealed = try EncryptedModelFile.seal(try SharedData.bytes("models/mnist-8.onnx"), name: "mnist-8.onnx",
                                                 keyID: "srv-1", keyring: keyring)
        let file = models.appendingPathComponent("mnist-8.onnx.enc")
        try Data(sealed).write(to: file)
        try #"{"preprocessing": "mnist", "family": "digits", "variant": "mnist-8", "version": "1"}"#
            .write(to: models.appendingPathComponent("mnist-8.json"), atomically: true, encoding: .utf8)
        let server = try GlimpseProcess(arguments: ["--models", models.path, "--admin-without-auth", "--model-key-file", keyFile.path])
        defer { server.stop() }
        let classify = { () throws -> String? in
            let ok = try ExternalClient.curl(server.base + "/rpc", body: RPC.classifyBody(image: try SharedData.data("images/digits/torchserve_6.png"), model: "mnist-8"))
            return try JSONValue.parse([UInt8](ok.body))["result"]?["predictions"]?[0]?["label"]?.stringValue
        }
        XCTAssertEqual(try classify(), "6")
        var tampered = sealed
        tampered[sealed.count / 2] ^= 0x04
        try Data(tampered).write(to: file)
        let body = #"{"jsonrpc":"2.0","id":9,"method":"models.reload","params":{"model":"mnist-8"}}"#
        let reply = try JSONValue.parse([UInt8](try ExternalClient.curl(server.base + "/rpc", body: Data(body.utf8)).body))
        XCTAssertEqual(reply["error"]?["code"]?.intValue, -32002, reply.jsonString)
        let message = reply["error"]?["message"]?.stringValue ?? ""
        XCTAssertTrue(message.contains("mnist-8.onnx.enc") && message.contains("authentication failed"), message)
        XCTAssertFalse(reply.jsonString.contains(dir.path), "no server paths in the error")
        XCTAssertEqual(try classify(), "6")
    }
}
