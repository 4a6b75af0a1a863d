import Foundation
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// TLS with ALPN, advertised HTTP/2 settings, API keys, timeouts and an h2load run, each checked with
/// a client we did not write (curl, nghttp, h2load) against the real executable.
final class HTTPSurfaceTests: XCTestCase {
    /// Runs a tool and returns its exit status, stdout and stderr.
    func run(_ tool: String, _ args: [String], timeout: TimeInterval = 60) throws -> (status: Int32, out: String, err: String) {
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            throw TestServerError(description: "\(tool) is not installed (scripts/setup.sh --test installs it)")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let killer = DispatchWorkItem { if p.isRunning { p.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        killer.cancel()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    func tempDir() throws -> URL {
        let dir = try temporaryFolder("http").url
        return dir
    }

    func testTLSNegotiatesH2AndHTTP1WithALPN() throws {
        let dir = try tempDir()
        let cert = dir.appendingPathComponent("cert.pem").path, key = dir.appendingPathComponent("key.pem").path
        let made = try run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                                "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                                                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        XCTAssertEqual(made.status, 0, made.err)
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder(), "--tls-cert", cert, "--tls-key", key])
        defer { server.stop() }
        XCTAssertTrue(server.log.contains("https://127.0.0.1"), server.log)
        let base = "https://127.0.0.1:\(server.port)"
        let image = try SharedData.data("images/digits/torchserve_7.png")
        let bodyFile = dir.appendingPathComponent("body.json")
        try RPC.classifyBody(image: image, model: "mnist-8").write(to: bodyFile)

        // HTTP/2 chosen by ALPN, certificate verified against the test CA.
        let h2 = try run("/usr/bin/curl", ["-v", "-sS", "--max-time", "30", "--cacert", cert, "-H", "content-type: application/json",
                                           "--data-binary", "@\(bodyFile.path)", "-w", "\n%{http_version}", base + "/rpc"])
        XCTAssertEqual(h2.status, 0, h2.err)
        XCTAssertTrue(h2.err.contains("ALPN: server accepted h2"), h2.err)
        XCTAssertTrue(h2.out.hasSuffix("\n2"), h2.out)
        let json = try JSONValue.parse(Array(h2.out.split(separator: "\n").first.map { Array($0.utf8) } ?? []))
        XCTAssertEqual(json["result"]?["predictions"]?[0]?["label"]?.stringValue, "7", h2.out)

        // HTTP/1.1 over TLS on the same port.
        let h1 = try run("/usr/bin/curl", ["-v", "-sS", "--max-time", "30", "--http1.1", "--cacert", cert, "-w", "\n%{http_code} %{http_version}", base + "/healthz"])
        XCTAssertEqual(h1.status, 0, h1.err)
        XCTAssertTrue(h1.err.contains("ALPN: server accepted http/1.1"), h1.err)
        XCTAssertTrue(h1.out.hasSuffix("\n200 1.1"), h1.out)

        // Clear text on a TLS port is refused, and the server keeps serving TLS.
        let plain = try run("/usr/bin/curl", ["-sS", "--max-time", "10", "--http2-prior-knowledge", "http://127.0.0.1:\(server.port)/healthz"])
        XCTAssertNotEqual(plain.status, 0)
        let again = try run("/usr/bin/curl", ["-sS", "--max-time", "30", "--cacert", cert, base + "/healthz"])
        XCTAssertEqual(again.status, 0, again.err)
    }

    func testTLSRefusesToStartWithABadKey() throws {
        let dir = try tempDir()
        let cert = dir.appendingPathComponent("cert.pem").path
        try "not a certificate".write(toFile: cert, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder(), "--tls-cert", cert, "--tls-key", cert])) { error in
            XCTAssertTrue("\(error)".contains("cannot read a PEM certificate chain"), "\(error)")
        }
    }

    func testHTTP2SettingsAreAdvertisedAsConfigured() throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder(), "--http2-max-streams", "7",
                                                    "--http2-initial-window", "200000", "--http2-max-frame", "32768",
                                                    "--http2-max-header-list", "8192"])
        defer { server.stop() }
        let r = try run("/usr/bin/nghttp", ["-v", "-t", "20", server.base + "/healthz"])
        XCTAssertEqual(r.status, 0, r.out + r.err)
        let settings = r.out.components(separatedBy: "recv SETTINGS frame").dropFirst().first ?? ""
        XCTAssertTrue(settings.contains("SETTINGS_MAX_CONCURRENT_STREAMS(0x03):7"), settings)
        XCTAssertTrue(settings.contains("SETTINGS_INITIAL_WINDOW_SIZE(0x04):200000"), settings)
        XCTAssertTrue(settings.contains("SETTINGS_MAX_FRAME_SIZE(0x05):32768"), settings)
        XCTAssertTrue(settings.contains("SETTINGS_MAX_HEADER_LIST_SIZE(0x06):8192"), settings)

        // Defaults, and a value outside the protocol's bounds is refused at start.
        XCTAssertThrowsError(try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder(), "--http2-max-frame", "1000"])) { error in
            XCTAssertTrue("\(error)".contains("max frame size must be between 16384 and 16777215"), "\(error)")
        }
    }

    func testAPIKeysAndTheAdminRole() throws {
        let dir = try tempDir()
        let keys = dir.appendingPathComponent("keys.txt")
        try """
        # test keys
        user-key-0123456789abcdef user reader
        admin-key-0123456789abcdef admin operator
        """.write(to: keys, atomically: true, encoding: .utf8)
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder(), "--api-keys", keys.path])
        defer { server.stop() }
        let health = Data(#"{"jsonrpc":"2.0","id":1,"method":"health"}"#.utf8)

        for extra in [[], ["-H", "Authorization: Bearer wrong-key-0123456789abcdef"], ["-H", "Authorization: Basic dXNlcjpwYXNz"]] {
            let denied = try ExternalClient.curl(server.base + "/rpc", body: health, extra: extra)
            XCTAssertEqual(denied.status, 401)
            XCTAssertTrue(denied.headers.lowercased().contains("www-authenticate: bearer"), denied.headers)
            XCTAssertEqual(try JSONValue.parse([UInt8](denied.body))["error"]?["code"]?.intValue, -32003)
        }
        let rest = try ExternalClient.curl(server.base + "/v1/classify?model=mnist-8", body: try SharedData.data("images/digits/torchserve_3.png"),
                                           contentType: "image/png")
        XCTAssertEqual(rest.status, 401)
        // Open Inference Protocol: health and the server metadata are open (probes carry no key); a
        // model's metadata and readiness ask for a key, as infer does.
        for open in ["/v2/health/live", "/v2/health/ready", "/v2"] {
            XCTAssertEqual(try ExternalClient.curl(server.base + open).status, 200, open)
        }
        for closed in ["/v2/models/mnist-8", "/v2/models/mnist-8/ready"] {
            XCTAssertEqual(try ExternalClient.curl(server.base + closed).status, 401, closed)
            XCTAssertEqual(try ExternalClient.curl(server.base + closed, extra: ["-H", "Authorization: Bearer user-key-0123456789abcdef"]).status,
                           200, closed)
        }

        let user = ["-H", "Authorization: Bearer user-key-0123456789abcdef"]
        let admin = ["-H", "Authorization: Bearer admin-key-0123456789abcdef"]
        let ok = try ExternalClient.curl(server.base + "/rpc", body: RPC.classifyBody(image: try SharedData.data("images/digits/torchserve_3.png"), model: "mnist-8"), extra: user)
        XCTAssertEqual(ok.status, 200)
        XCTAssertEqual(try JSONValue.parse([UInt8](ok.body))["result"]?["predictions"]?[0]?["label"]?.stringValue, "3")

        let unload = Data(#"{"jsonrpc":"2.0","id":2,"method":"models.unload","params":{"model":"mnist-8"}}"#.utf8)
        let refused = try JSONValue.parse([UInt8](try ExternalClient.curl(server.base + "/rpc", body: unload, extra: user).body))
        XCTAssertEqual(refused["error"]?["code"]?.intValue, -32003, refused.jsonString)
        XCTAssertTrue(refused["error"]?["message"]?.stringValue?.contains("admin") ?? false)

        let unloaded = try JSONValue.parse([UInt8](try ExternalClient.curl(server.base + "/rpc", body: unload, extra: admin).body))
        XCTAssertEqual(unloaded["result"]?["unloaded"]?.stringValue, "mnist-8", unloaded.jsonString)
        let gone = try JSONValue.parse([UInt8](try ExternalClient.curl(server.base + "/rpc", body: RPC.classifyBody(image: try SharedData.data("images/digits/torchserve_3.png"), model: "mnist-8"), extra: user).body))
        XCTAssertEqual(gone["error"]?["code"]?.intValue, -32602, gone.jsonString)

        let load = Data(#"{"jsonrpc":"2.0","id":3,"method":"models.load","params":{"model":"mnist-8"}}"#.utf8)
        let loaded = try JSONValue.parse([UInt8](try ExternalClient.curl(server.base + "/rpc", body: load, extra: admin).body))
        XCTAssertEqual(loaded["result"]?["name"]?.stringValue, "mnist-8", loaded.jsonString)
        let missing = try JSONValue.parse([UInt8](try ExternalClient.curl(server.base + "/rpc",
            body: Data(#"{"jsonrpc":"2.0","id":4,"method":"models.load","params":{"model":"../../etc/passwd"}}"#.utf8), extra: admin).body))
        XCTAssertEqual(missing["error"]?["code"]?.intValue, -32002, missing.jsonString)
        XCTAssertFalse(missing.jsonString.contains("/tmp"), "no server paths in errors: \(missing.jsonString)")

        // Probes and metrics stay open for load balancers and Prometheus.
        XCTAssertEqual(try ExternalClient.curl(server.base + "/healthz", http2: false).status, 200)
        XCTAssertEqual(try ExternalClient.curl(server.base + "/metrics", http2: false).status, 200)
    }

    func testSlowHeadersAreCutOffAfterTheHeaderTimeout() throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder(), "--header-timeout-s", "1"])
        defer { server.stop() }
        for opening in ["GET /healthz HTTP/1.1\r\nHost: x\r\n", "PRI * HTTP/2.0\r\n", ""] {
            let raw = try RawSocket(port: server.port)
            try raw.send(Array(opening.utf8))
            let started = Date()
            let closed = raw.waitForClose(seconds: 8)
            XCTAssertTrue(closed, "a client stalled after \(opening.debugDescription) must be disconnected")
            XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        }
        // A prompt client is unaffected.
        XCTAssertEqual(try ExternalClient.curl(server.base + "/healthz", http2: false).status, 200)
    }

    func testShortH2loadRun() throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder()])
        defer { server.stop() }
        let dir = try tempDir()
        let body = dir.appendingPathComponent("health.json")
        try Data(#"{"jsonrpc":"2.0","id":1,"method":"health"}"#.utf8).write(to: body)
        let r = try run("/usr/bin/h2load", ["-n", "400", "-c", "4", "-m", "8", "-d", body.path, "-H", "content-type: application/json",
                                            server.base + "/rpc"], timeout: 60)
        XCTAssertEqual(r.status, 0, r.out + r.err)
        XCTAssertTrue(r.out.contains("400 succeeded, 0 failed, 0 errored"), r.out)
        XCTAssertTrue(r.out.contains("status codes: 400 2xx"), r.out)
    }
}

/// A plain TCP connection for byte-level tests.
final class RawSocket {
    let fd: Int32

    init(port: Int) throws {
        fd = try connectLoopbackSocket(port: port)
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) throws {
        guard !bytes.isEmpty else { return }
        let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard n == bytes.count else { throw TestServerError(description: "send failed") }
    }

    /// True when the peer closes within `seconds` (anything it sends first is discarded).
    func waitForClose(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 && !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return true }
        }
        return false
    }
}
