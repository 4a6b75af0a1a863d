import Foundation
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// Without API keys the admin methods are closed: anyone who reaches the port may classify, but not
/// load, reload, unload or re-split models, unless the server is started with `--admin-without-auth`.
final class AdminDefaultsTests: XCTestCase {
    func smallModelFolder() throws -> String { try mnistOnlyFolder("admin") }

    func call(_ server: GlimpseProcess, _ method: String, _ params: JSONValue) throws -> JSONValue {
        let body: JSONValue = ["jsonrpc": "2.0", "id": 1, "method": .string(method), "params": params]
        let reply = try ExternalClient.curl(server.base + "/rpc", body: Data(body.serialized()))
        XCTAssertEqual(reply.status, 200, method)
        return try JSONValue.parse([UInt8](reply.body))
    }

    func testAdminMethodsAreRefusedByDefault() throws {
        let server = try GlimpseProcess(arguments: ["--models", try smallModelFolder()])
        defer { server.stop() }
        let calls: [(String, JSONValue)] = [("models.unload", ["model": "mnist-8"]), ("models.reload", ["model": "mnist-8"]),
                                             ("models.load", ["model": "mnist-8"]),
                                             ("models.traffic", ["family": "mnist-8", "weights": ["mnist-8": 1]])]
        for (method, params) in calls {
            let reply = try call(server, method, params)
            XCTAssertEqual(reply["error"]?["code"]?.intValue, -32003, "\(method): \(reply.jsonString)")
            XCTAssertTrue(reply["error"]?["message"]?.stringValue?.contains("--admin-without-auth") ?? false, reply.jsonString)
        }
        // Nothing was unloaded, and the open methods still answer.
        let list = try call(server, "models.list", .object([:]))
        guard case .array(let models)? = list["result"]?["models"] else { return XCTFail(list.jsonString) }
        XCTAssertEqual(models.compactMap { $0["name"]?.stringValue }, ["mnist-8"])
        XCTAssertTrue(server.log.contains("admin methods are refused"), "the start log says the admin methods are closed")
    }

    func testAdminWithoutAuthOpensThem() throws {
        let server = try GlimpseProcess(arguments: ["--models", try smallModelFolder(), "--admin-without-auth"])
        defer { server.stop() }
        let unload = try call(server, "models.unload", ["model": "mnist-8"])
        XCTAssertNil(unload["error"], unload.jsonString)
        let load = try call(server, "models.load", ["model": "mnist-8"])
        XCTAssertEqual(load["result"]?["name"]?.stringValue, "mnist-8", load.jsonString)
    }
}
