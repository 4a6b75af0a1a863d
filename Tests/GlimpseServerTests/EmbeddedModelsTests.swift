import Foundation
import GlimpseRPC
import XCTest

/// The models shipped in `models/` load with no flags but the folder, and classify every sample image
/// of `models/samples/` correctly, by family (dynamic selection) and by each variant's name.
final class EmbeddedModelsTests: XCTestCase {
    var repo: URL { URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent() }

    func testSamplesAreClassifiedCorrectlyByEveryVariant() throws {
        let models = repo.appendingPathComponent("models")
        let server = try GlimpseProcess(arguments: ["--models", models.path])
        defer { server.stop() }
        let list = try JSONValue.parse([UInt8](try ExternalClient.curl(server.base + "/rpc", body: Data(#"{"jsonrpc":"2.0","id":1,"method":"models.list"}"#.utf8)).body))
        guard case .array(let loaded)? = list["result"]?["models"] else { return XCTFail("no models: \(list.jsonString)") }
        var variants: [String: [String]] = [:]
        for m in loaded {
            guard let family = m["family"]?.stringValue, let name = m["name"]?.stringValue else { continue }
            variants[family, default: []].append(name)
            XCTAssertNotNil(m["accuracy"]?.doubleValue, "\(name) records its measured accuracy")
        }
        XCTAssertGreaterThanOrEqual(variants["digits"]?.count ?? 0, 3)
        XCTAssertGreaterThanOrEqual(variants["cifar10"]?.count ?? 0, 3)

        let samples = try FileManager.default.contentsOfDirectory(atPath: models.appendingPathComponent("samples").path).sorted()
        XCTAssertGreaterThanOrEqual(samples.count, 6)
        for sample in samples {
            // digit-7.png → family digits, label "7"; cifar10-cat.jpg → family cifar10, label "cat".
            let stem = (sample as NSString).deletingPathExtension
            let family = stem.hasPrefix("digit-") ? "digits" : "cifar10"
            let label = String(stem.split(separator: "-").last ?? "")
            let image = try Data(contentsOf: models.appendingPathComponent("samples/\(sample)"))
            for model in [family] + (variants[family] ?? []) {
                let reply = try JSONValue.parse([UInt8](try ExternalClient.curl(server.base + "/rpc", body: RPC.classifyBody(image: image, model: model)).body))
                XCTAssertEqual(reply["result"]?["predictions"]?[0]?["label"]?.stringValue, label, "\(sample) with \(model): \(reply.jsonString)")
                if model == family {
                    XCTAssertEqual(reply["result"]?["reason"]?.stringValue, "most_accurate")
                }
            }
        }
    }
}
