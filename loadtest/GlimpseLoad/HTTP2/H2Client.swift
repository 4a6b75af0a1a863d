import Foundation

/// A small HTTP/2 client for tests and tools (h2c prior knowledge, or h2 over TLS with `tls`): one
/// connection with its own event-loop thread, any number of concurrent requests, async or blocking calls.
///
///     let client = try H2Client(host: "127.0.0.1", port: 8080)
///     let secure = try H2Client(host: "localhost", port: 8443, tls: TLSOptions(caFile: "ca.pem"))
///     let response = try await client.post(path: "/rpc", headers: [("content-type", "application/json")], body: bytes)
///     client.close()
public final class H2Client: @unchecked Sendable {
    public let connection: H2Connection

    /// Connects (and with `tls`, completes the TLS handshake) before returning; throws `H2Error` (`.connect`,
    /// `.tls`) when that fails.
    public init(host: String, port: Int, requestTimeout: Double = 30, tls: TLSOptions? = nil) throws {
        let context = try tls.map { try TLSContext($0) }
        connection = try H2Connection(host: host, port: port, requestTimeout: requestTimeout, tls: context)
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
        try await request(H2Request(method: "POST", path: path, authority: connection.authority, headers: headers, body: body,
                                     scheme: connection.scheme))
    }

    public func post(path: String, headers: [(String, String)] = [], body: String) async throws -> H2Response {
        try await post(path: path, headers: headers, body: Array(body.utf8))
    }

    public func get(path: String, headers: [(String, String)] = []) async throws -> H2Response {
        try await request(H2Request(method: "GET", path: path, authority: connection.authority, headers: headers, scheme: connection.scheme))
    }

    public func postBlocking(path: String, headers: [(String, String)] = [], body: [UInt8]) throws -> H2Response {
        try requestBlocking(H2Request(method: "POST", path: path, authority: connection.authority, headers: headers, body: body,
                                     scheme: connection.scheme))
    }

    public func getBlocking(path: String, headers: [(String, String)] = []) throws -> H2Response {
        try requestBlocking(H2Request(method: "GET", path: path, authority: connection.authority, headers: headers, scheme: connection.scheme))
    }

    private final class ResultBox: @unchecked Sendable {
        var result: Result<H2Response, H2Error>?
    }
}
