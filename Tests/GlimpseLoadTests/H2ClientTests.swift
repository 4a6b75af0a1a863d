import Foundation
import GlimpseLoad
import GlimpseTestSupport
import XCTest

/// The client against an HTTP/2 server we did not write (nghttpd, when installed) and against the
/// tiny in-test server on libnghttp2's server side.
final class H2ClientTests: XCTestCase {
    func testGetAndPostAgainstTinyServer() async throws {
        let server = try TinyH2Server { method, path, body in
            (200, [("content-type", "text/plain"), ("x-path", path)], Array("\(method) \(body.count)".utf8))
        }
        defer { server.stop() }
        let client = try H2Client(host: "127.0.0.1", port: server.port)
        defer { client.close() }
        let get = try await client.get(path: "/hello")
        XCTAssertEqual(get.status, 200)
        XCTAssertEqual(get.bodyString, "GET 0")
        XCTAssertEqual(get.header("x-path"), "/hello")
        // A body larger than the 64 KiB default stream window exercises flow control.
        let big = [UInt8](repeating: 65, count: 300_000)
        let post = try await client.post(path: "/rpc", headers: [("content-type", "application/json")], body: big)
        XCTAssertEqual(post.bodyString, "POST 300000")
    }

    func testManyConcurrentStreamsOnOneConnection() async throws {
        let server = try TinyH2Server { _, path, _ in (200, [], Array(path.utf8)) }
        defer { server.stop() }
        let client = try H2Client(host: "127.0.0.1", port: server.port)
        defer { client.close() }
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<200 { group.addTask { try await client.get(path: "/item/\(i)").bodyString } }
            var out: Set<String> = []
            for try await body in group { out.insert(body) }
            return out
        }
        XCTAssertEqual(bodies, Set((0..<200).map { "/item/\($0)" }))
    }

    func testBlockingCallsAndConnectionErrors() throws {
        let server = try TinyH2Server { _, _, _ in (503, [("retry-after", "1")], Array("{}".utf8)) }
        let client = try H2Client(host: "127.0.0.1", port: server.port)
        let response = try client.postBlocking(path: "/rpc", body: Array("{}".utf8))
        XCTAssertEqual(response.status, 503)
        XCTAssertEqual(response.header("retry-after"), "1")
        client.close()
        // After close, requests fail with a typed error instead of hanging.
        XCTAssertThrowsError(try client.getBlocking(path: "/")) { error in
            XCTAssertEqual((error as? H2Error)?.kind, .connectionClosed)
        }
        server.stop()
        XCTAssertThrowsError(try H2Client(host: "127.0.0.1", port: 1)) { error in
            XCTAssertEqual((error as? H2Error)?.kind, .connect)
        }
    }

    func testTimeoutResetsTheStream() throws {
        let server = try TinyH2Server(serviceTime: 2.0) { _, _, _ in (200, [], []) }
        defer { server.stop() }
        let client = try H2Client(host: "127.0.0.1", port: server.port, requestTimeout: 0.2)
        defer { client.close() }
        let started = Date()
        XCTAssertThrowsError(try client.getBlocking(path: "/slow")) { error in
            XCTAssertEqual((error as? H2Error)?.kind, .timeout)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.5)
    }

    func testAgainstNghttpd() throws {
        guard let nghttpd = ["/usr/sbin/nghttpd", "/usr/bin/nghttpd"].first(where: FileManager.default.isExecutableFile) else {
            XCTFail("nghttpd is not installed: scripts/setup.sh --test installs Debian's nghttp2-server")
            return
        }
        let docs = try temporaryFolder("load").url
        try Data("hello from nghttpd\n".utf8).write(to: docs.appendingPathComponent("index.html"))
        let port = 20000 + Int.random(in: 0..<20000)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nghttpd)
        process.arguments = ["--no-tls", "--echo-upload", "-d", docs.path, String(port)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { process.terminate(); process.waitUntilExit() }
        var client: H2Client?
        for _ in 0..<50 where client == nil {
            client = try? H2Client(host: "127.0.0.1", port: port)
            if client == nil { Thread.sleep(forTimeInterval: 0.05) }
        }
        guard let client else { return XCTFail("nghttpd did not start on \(port)") }
        defer { client.close() }
        let get = try client.getBlocking(path: "/index.html")
        XCTAssertEqual(get.status, 200)
        XCTAssertEqual(get.bodyString, "hello from nghttpd\n")
        XCTAssertEqual(try client.getBlocking(path: "/missing").status, 404)
        let payload = [UInt8]((0..<200_000).map { UInt8($0 % 251) })
        let echoed = try client.postBlocking(path: "/echo", body: payload)
        XCTAssertEqual(echoed.status, 200)
        XCTAssertEqual(echoed.body, payload)
    }
}
