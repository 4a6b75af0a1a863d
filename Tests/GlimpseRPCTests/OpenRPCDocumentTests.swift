import Foundation
import GlimpseRPC
import GlimpseServing
import XCTest

final class OpenRPCDocumentTests: XCTestCase {
    /// `openapi/openrpc.json` is what `rpc.discover` serves; regenerate it from a running server with
    /// `curl -s localhost:8080/rpc -d '{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}'` when methods change.
    func testCommittedDocumentMatchesTheServedOne() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("openapi/openrpc.json")
        let committed = try JSONValue.parse([UInt8](Data(contentsOf: url)))
        XCTAssertEqual(committed, OpenRPCDocument.document)
    }

    func testEveryMethodOfTheTableIsDescribed() throws {
        guard case .array(let methods)? = OpenRPCDocument.document["methods"] else { return XCTFail("no methods") }
        let described = Set(methods.compactMap { $0["name"]?.stringValue })
        let service = InferenceService(configuration: .init(decodeThreads: 1, engineThreads: 1))
        defer { service.shutdown() }
        XCTAssertEqual(described, Set(GlimpseMethods.table(service: service).keys))
    }
}
