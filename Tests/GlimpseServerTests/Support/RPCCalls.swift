import Foundation
import GlimpseRPC
import XCTest

/// Builds JSON-RPC bodies and sends them with curl over h2c.
enum RPC {
    static func classifyBody(image: Data, model: String, id: JSONValue = 1, topK: Int = 5) -> Data {
        let call: JSONValue = ["jsonrpc": "2.0", "id": id, "method": "classify",
                               "params": ["image": .string(image.base64EncodedString()), "model": .string(model), "top_k": .int(topK)]]
        return Data(call.serialized())
    }

    static func post(_ server: TestServer, _ body: Data, http2: Bool = true) throws -> (ExternalClient.Reply, JSONValue?) {
        let reply = try ExternalClient.curl(server.base + "/rpc", body: body, http2: http2)
        let json = reply.body.isEmpty ? nil : try JSONValue.parse([UInt8](reply.body))
        return (reply, json)
    }

    static func post(_ server: TestServer, _ text: String) throws -> (ExternalClient.Reply, JSONValue?) {
        try post(server, Data(text.utf8))
    }

    /// Top-1 index of a classify result.
    static func top1(_ response: JSONValue?, file: StaticString = #filePath, line: UInt = #line) -> Int? {
        guard case .array(let predictions)? = response?["result"]?["predictions"], let first = predictions.first else {
            XCTFail("no predictions in \(response?.jsonString ?? "nil")", file: file, line: line)
            return nil
        }
        return first["index"]?.intValue
    }
}
