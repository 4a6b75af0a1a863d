import Foundation

/// A small HTTP/2 (h2c prior knowledge) client for tests and tools: one connection with its own
/// event-loop thread, any number of concurrent requests, async or blocking calls.
///
///     let client = try H2Client(host: "127.0.0.1", port: 8080)
///     let response = try await client.post(path: "/rpc", headers: [("content-type", "application/json")], body: bytes)
///     client.close()
public final class H2Client: @unchecked Sendable {
    public let connection: H2Connection

    public init(host: String, port: Int, requestTimeout: Double = 30) throws {
        connection = try H2Connection(host: host, port: port, requestTimeout: requestTimeout)
        connection.start(name: "h2-client")
    }

    deinit { close() }

    /// Stops the connection; requests still open fail with `.connectionClosed`.
    public func close() {
        connection.stop()
        _ = connection.join(timeout: 5)
    }

    public func request(_ request: H2Request) async throws -> H2Response {
        try await withCheckedThrowingContinuation { continuation in
            connection.submit(request) { result, _ in continuation.resume(with: result) }
        }
    }

    /// Blocks the calling thread until the response arrives (never call it on the connection's thread).
    public func requestBlocking(_ request: H2Request) throws -> H2Response {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox()
        connection.submit(request) { result, _ in
            box.result = result
            done.signal()
        }
        done.wait()
        guard let result = box.result else { throw H2Error(.connectionClosed, detail: "no result") }
        return try result.get()
    }

    public func post(path: String, headers: [(String, String)] = [], body: [UInt8]) async throws -> H2Response {
        try await request(H2Request(method: "POST", path: path, authority: connection.authority, headers: headers, body: body))
    }

    public func post(path: String, headers: [(String, String)] = [], body: String) async throws -> H2Response {
        try await post(path: path, headers: headers, body: Array(body.utf8))
    }

    public func get(path: String, headers: [(String, String)] = []) async throws -> H2Response {
        try await request(H2Request(method: "GET", path: path, authority: connection.authority, headers: headers))
    }

    public func postBlocking(path: String, headers: [(String, String)] = [], body: [UInt8]) throws -> H2Response {
        try requestBlocking(H2Request(method: "POST", path: path, authority: connection.authority, headers: headers, body: body))
    }

    public func getBlocking(path: String, headers: [(String, String)] = []) throws -> H2Response {
        try requestBlocking(H2Request(method: "GET", path: path, authority: connection.authority, headers: headers))
    }

    private final class ResultBox: @unchecked Sendable {
        var result: Result<H2Response, H2Error>?
    }
}
