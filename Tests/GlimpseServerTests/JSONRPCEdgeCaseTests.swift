import Foundation
import GlimpseRPC
import XCTest

/// JSON-RPC 2.0 corner cases over HTTP/2 (curl), answered as the specification says.
final class JSONRPCEdgeCaseTests: XCTestCase {
    func post(_ body: String) async throws -> (status: Int, json: JSONValue?) {
        let server = try await TestServer.shared.value
        let (reply, json) = try RPC.post(server, body)
        return (reply.status, json)
    }

    func testEmptyBatchIsOneInvalidRequest() async throws {
        let (status, json) = try await post("[]")
        XCTAssertEqual(status, 200)
        XCTAssertEqual(json?["error"]?["code"], .int(-32600))
        XCTAssertEqual(json?["id"], .null)
    }

    func testBatchOfInvalidEntriesAnswersEachInOrder() async throws {
        let (_, json) = try await post("[1, 2, 3]")
        guard case .array(let replies)? = json else { return XCTFail("expected an array: \(json?.jsonString ?? "nil")") }
        XCTAssertEqual(replies.count, 3)
        for r in replies {
            XCTAssertEqual(r["error"]?["code"], .int(-32600))
            XCTAssertEqual(r["id"], .null)
        }
    }

    func testMixedBatchKeepsOrderAndSkipsNotifications() async throws {
        let (_, json) = try await post("""
        [{"jsonrpc":"2.0","id":"a","method":"health"},
         {"jsonrpc":"2.0","method":"health"},
         {"foo":"bar"},
         {"jsonrpc":"2.0","id":"x","method":"nope"},
         {"jsonrpc":"2.0","id":[1],"method":"health"}]
        """)
        guard case .array(let r)? = json, r.count == 4 else { return XCTFail("expected an array of 4: \(json?.jsonString ?? "nil")") }
        XCTAssertEqual(r[0]["id"], .string("a"))
        XCTAssertEqual(r[0]["result"]?["status"], .string("ok"))
        XCTAssertEqual(r[1]["error"]?["code"], .int(-32600))
        XCTAssertEqual(r[2]["error"]?["code"], .int(-32601))
        XCTAssertEqual(r[2]["id"], .string("x"))
        XCTAssertEqual(r[3]["error"]?["code"], .int(-32600))
        XCTAssertEqual(r[3]["id"], .null)
    }

    func testHugeNumericIdsAreRefusedNotRounded() async throws {
        for id in ["123456789012345678901234567890", "1e400", "-1e400"] {
            let (_, json) = try await post(#"{"jsonrpc":"2.0","id":\#(id),"method":"health"}"#)
            XCTAssertEqual(json?["error"]?["code"], .int(-32600), id)
            XCTAssertEqual(json?["id"], .null)
        }
        // The largest exactly representable integers are echoed as sent.
        let (_, ok) = try await post(#"{"jsonrpc":"2.0","id":9007199254740991,"method":"health"}"#)
        XCTAssertEqual(ok?["id"], .int(9_007_199_254_740_991))
        XCTAssertNotNil(ok?["result"])
    }

    func testUnicodeInIdMethodAndParams() async throws {
        let (_, json) = try await post(#"{"jsonrpc":"2.0","id":"ид-🚀","method":"mëthød🚀"}"#)
        XCTAssertEqual(json?["id"], .string("ид-🚀"))
        XCTAssertEqual(json?["error"]?["code"], .int(-32601))
        XCTAssertEqual(json?["error"]?["data"]?["method"], .string("mëthød🚀"))
        let (_, escaped) = try await post(#"{"jsonrpc":"2.0","id":"\u0069\ud83d\ude80","method":"classify","params":{"image":"","model":"m\u00f6del"}}"#)
        XCTAssertEqual(escaped?["id"], .string("i🚀"))
        XCTAssertEqual(escaped?["error"]?["code"], .int(-32602))
    }

    func testDuplicateKeysTakeTheLastValue() async throws {
        let (_, json) = try await post(#"{"jsonrpc":"2.0","method":"nope","method":"health","id":1,"id":2}"#)
        XCTAssertEqual(json?["id"], .int(2))
        XCTAssertEqual(json?["result"]?["status"], .string("ok"))
    }

    func testWrongOrMissingVersion() async throws {
        for body in [#"{"jsonrpc":"1.0","id":1,"method":"health"}"#, #"{"id":1,"method":"health"}"#, #"{"jsonrpc":2.0,"id":1,"method":"health"}"#] {
            let (_, json) = try await post(body)
            XCTAssertEqual(json?["error"]?["code"], .int(-32600), body)
            XCTAssertEqual(json?["id"], .int(1), "a valid id is echoed in the error")
        }
    }

    func testNotificationOnlyBatchHasNoBody() async throws {
        let (status, json) = try await post(#"[{"jsonrpc":"2.0","method":"health"},{"jsonrpc":"2.0","method":"nope"}]"#)
        XCTAssertEqual(status, 204)
        XCTAssertNil(json)
    }
}
