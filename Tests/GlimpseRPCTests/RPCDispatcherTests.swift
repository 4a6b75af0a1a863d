import GlimpseRPC
import XCTest

final class RPCDispatcherTests: XCTestCase {
    struct Boom: Error, CustomStringConvertible { var description: String { "secret /internal/path exploded" } }

    let dispatcher = RPCDispatcher(methods: [
        "echo": { params, _ in params ?? .null },
        "fail": { _, _ in throw Boom() },
        "needs_int": { params, _ in
            guard params?["n"]?.intValue != nil else { throw RPCError.invalidParams("\"n\" must be an integer") }
            return "ok"
        },
    ], maxBatchLength: 4)

    func call(_ text: String) async throws -> (JSONValue?, RPCHTTPResponse) {
        let response = await dispatcher.handle(body: Array(text.utf8))
        return (response.body.isEmpty ? nil : try JSONValue.parse(response.body), response)
    }

    func testSingleCallEchoesStringNumberAndNullIds() async throws {
        for id in ["\"abc\"", "7", "-3", "1.5", "null"] {
            let (reply, http) = try await call(#"{"jsonrpc":"2.0","method":"echo","params":{"x":1},"id":\#(id)}"#)
            XCTAssertEqual(http.status, 200)
            XCTAssertEqual(reply?["id"], try JSONValue.parse(Array(id.utf8)))
            XCTAssertEqual(reply?["result"], ["x": 1])
            XCTAssertEqual(reply?["jsonrpc"], "2.0")
            XCTAssertNil(reply?["error"])
        }
    }

    func testParseError() async throws {
        let (reply, _) = try await call(#"{"jsonrpc":"2.0","method":"echo","#)
        XCTAssertEqual(reply?["error"]?["code"], .int(-32700))
        XCTAssertEqual(reply?["id"], .null)
        XCTAssertTrue(reply?["error"]?["message"]?.stringValue?.contains("Parse error") ?? false)
    }

    func testInvalidRequests() async throws {
        let cases = [
            #"{"jsonrpc":"1.0","method":"echo","id":1}"#,
            #"{"method":"echo","id":1}"#,
            #"{"jsonrpc":"2.0","method":5,"id":1}"#,
            #"{"jsonrpc":"2.0","method":"echo","params":"x","id":1}"#,
            #"{"jsonrpc":"2.0","method":"echo","id":{"a":1}}"#,
            #"42"#,
            #"[]"#,
        ]
        for text in cases {
            let (reply, _) = try await call(text)
            let error = reply?["error"] ?? reply.flatMap { if case .array(let a) = $0 { return a.first?["error"] } else { return nil } }
            XCTAssertEqual(error?["code"], .int(-32600), text)
        }
        // The id is echoed when it is valid, even when the rest is not.
        let (reply, _) = try await call(#"{"jsonrpc":"1.0","method":"echo","id":9}"#)
        XCTAssertEqual(reply?["id"], 9)
    }

    func testMethodNotFoundNamesTheMethod() async throws {
        let (reply, _) = try await call(#"{"jsonrpc":"2.0","method":"nope","id":1}"#)
        XCTAssertEqual(reply?["error"]?["code"], .int(-32601))
        XCTAssertTrue(reply?["error"]?["message"]?.stringValue?.contains("nope") ?? false)
    }

    func testInvalidParams() async throws {
        let (reply, _) = try await call(#"{"jsonrpc":"2.0","method":"needs_int","params":{"n":"x"},"id":1}"#)
        XCTAssertEqual(reply?["error"]?["code"], .int(-32602))
    }

    func testInternalErrorLeaksNothing() async throws {
        let (reply, http) = try await call(#"{"jsonrpc":"2.0","method":"fail","id":1}"#)
        XCTAssertEqual(reply?["error"]?["code"], .int(-32603))
        XCTAssertEqual(http.status, 200)
        let text = String(decoding: http.body, as: UTF8.self)
        XCTAssertFalse(text.contains("secret"))
        XCTAssertFalse(text.contains("/internal/path"))
    }

    func testNotificationsGetNoResponse() async throws {
        let (reply, http) = try await call(#"{"jsonrpc":"2.0","method":"echo","params":[1]}"#)
        XCTAssertNil(reply)
        XCTAssertTrue(http.body.isEmpty)
        // Even a notification of an unknown method gets nothing back.
        let (reply2, http2) = try await call(#"{"jsonrpc":"2.0","method":"nope"}"#)
        XCTAssertNil(reply2)
        XCTAssertTrue(http2.body.isEmpty)
        // A batch of notifications only: empty body.
        let (reply3, http3) = try await call(#"[{"jsonrpc":"2.0","method":"echo"},{"jsonrpc":"2.0","method":"echo"}]"#)
        XCTAssertNil(reply3)
        XCTAssertTrue(http3.body.isEmpty)
    }

    func testBatchKeepsOrderAndSkipsNotifications() async throws {
        let (reply, _) = try await call(#"""
        [{"jsonrpc":"2.0","method":"echo","params":{"i":1},"id":"a"},
         {"jsonrpc":"2.0","method":"echo","params":{"i":2}},
         1,
         {"jsonrpc":"2.0","method":"nope","id":"c"}]
        """#)
        guard case .array(let items)? = reply else { return XCTFail("expected an array") }
        XCTAssertEqual(items.count, 3)
        XCTAssertEqual(items[0]["id"], "a")
        XCTAssertEqual(items[0]["result"], ["i": 1])
        XCTAssertEqual(items[1]["error"]?["code"], .int(-32600))
        XCTAssertEqual(items[1]["id"], .null)
        XCTAssertEqual(items[2]["error"]?["code"], .int(-32601))
    }

    func testBatchLengthLimit() async throws {
        let call1 = #"{"jsonrpc":"2.0","method":"echo","id":1}"#
        let (reply, _) = try await call("[" + Array(repeating: call1, count: 5).joined(separator: ",") + "]")
        XCTAssertEqual(reply?["error"]?["code"], .int(-32600))
    }

    func testOverloadIsHTTP503WithRetryAfter() async throws {
        let busy = RPCDispatcher(methods: ["x": { _, _ in
            throw RPCError(code: RPCError.overloadedCode, message: "overloaded", data: ["reason": "queue_full", "retry_after_ms": 1500])
        }])
        let r = await busy.handle(body: Array(#"{"jsonrpc":"2.0","method":"x","id":1}"#.utf8))
        XCTAssertEqual(r.status, 503)
        XCTAssertEqual(r.retryAfterSeconds, 2)
    }
}
