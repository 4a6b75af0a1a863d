import Foundation
import GlimpseRPC
import GlimpseTestSupport
import XCTest
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The `glimpse-load` executable against a live Glimpse server: closed-loop sweep and open loop, with
/// every output format.
final class LoadGeneratorLiveTests: XCTestCase {
    static var binary: URL { GlimpseProcess.binary.deletingLastPathComponent().appendingPathComponent("glimpse-load") }

    func run(_ args: [String]) throws -> String {
        let out = try ExternalClient.run(Self.binary.path, args + ["--quiet"])
        return String(decoding: out, as: UTF8.self)
    }

    /// `body` (a `run`) fails: glimpse-load exits non-zero and its stderr contains every fragment of
    /// `naming`, so a failure for another reason (a crash, a bad flag, a refused connection) does not pass.
    func assertFails(_ body: @autoclosure () throws -> String, naming fragments: [String],
                     file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            guard let failure = error as? ExternalClient.ClientError, let status = failure.status else {
                return XCTFail("glimpse-load did not run to a failing exit: \(error)", file: file, line: line)
            }
            XCTAssertNotEqual(status, 0, file: file, line: line)
            for fragment in fragments {
                XCTAssertTrue(failure.stderr.contains(fragment), "glimpse-load's stderr lacks \"\(fragment)\": \(failure.stderr)",
                              file: file, line: line)
            }
        }
    }

    func digitsFolder() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("glimpse-load-digits-\(getpid())")
        try? FileManager.default.removeItem(at: dir)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for d in 0..<10 {
            try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("\(d).png").path,
                                                       withDestinationPath: try SharedData.path("images/digits/torchserve_\(d).png"))
        }
        return dir.path
    }

    func testClosedLoopSweepWithCSVJSONAndSVG() async throws {
        let server = try await TestServer.shared.value
        let dir = try temporaryFolder("load-out").url
        let table = try run(["--port", String(server.port), "--images", try digitsFolder(), "--model", "mnist-8",
                             "-c", "2", "--concurrency", "2,4", "--duration", "1", "--warmup", "0.3", "--max-requests", "2000",
                             "--csv", dir.appendingPathComponent("r.csv").path, "--json", dir.appendingPathComponent("r.json").path,
                             "--svg", dir.appendingPathComponent("r.svg").path])
        XCTAssertTrue(table.contains("p99"), table)

        let csv = try String(contentsOf: dir.appendingPathComponent("r.csv"), encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(csv.count, 3, "a header and one row per sweep point")
        let json = try JSONValue.parse([UInt8](Data(contentsOf: dir.appendingPathComponent("r.json"))))
        guard case .array(let runs)? = json["runs"] else { return XCTFail("no runs") }
        XCTAssertEqual(runs.count, 2)
        for r in runs {
            XCTAssertGreaterThan(r["succeeded"]?.intValue ?? 0, 5)
            XCTAssertEqual(r["errors"]?.intValue, 0)
            XCTAssertGreaterThan(r["achievedRate"]?.doubleValue ?? 0, 0)
            XCTAssertEqual(r["variants"]?["mnist-8"].flatMap { $0.intValue }, r["succeeded"]?.intValue)
        }
        let svg = try Data(contentsOf: dir.appendingPathComponent("r.svg"))
        let parser = XMLParser(data: svg)
        XCTAssertTrue(parser.parse(), "the SVG must be well-formed XML")
        XCTAssertTrue(String(decoding: svg, as: UTF8.self).contains("<svg"))
    }

    func testOpenLoopPoissonIsBoundedAndAnswered() async throws {
        let server = try await TestServer.shared.value
        let dir = try temporaryFolder("load-open").url
        let started = Date()
        _ = try run(["--port", String(server.port), "--images", try digitsFolder(), "--model", "mnist-8",
                     "--rate", "40", "--poisson", "--duration", "1.5", "--warmup", "0.2", "--max-requests", "500",
                     "--json", dir.appendingPathComponent("o.json").path])
        XCTAssertLessThan(Date().timeIntervalSince(started), 20)
        let json = try JSONValue.parse([UInt8](Data(contentsOf: dir.appendingPathComponent("o.json"))))
        guard case .array(let runs)? = json["runs"], let r = runs.first else { return XCTFail("no runs") }
        let succeeded = r["succeeded"]?.intValue ?? 0
        XCTAssertGreaterThan(succeeded, 20)   // about 60 expected at 40/s for 1.5 s
        XCTAssertLessThan(succeeded, 150)
        XCTAssertEqual(r["errors"]?.intValue, 0)
    }

    /// glimpse-load (libnghttp2 + OpenSSL) against Glimpse (swift-nio-ssl) over TLS with ALPN h2.
    func testClosedLoopOverTLSAgainstGlimpse() throws {
        let dir = try temporaryFolder("load-tls").url
        let cert = dir.appendingPathComponent("cert.pem").path, key = dir.appendingPathComponent("key.pem").path
        _ = try ExternalClient.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                                        "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                                                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder(), "--tls-cert", cert, "--tls-key", key])
        defer { server.stop() }
        _ = try run(["--host", "127.0.0.1", "--port", String(server.port), "--tls", "--cacert", cert,
                     "--images", try digitsFolder(), "--model", "mnist-8", "-c", "2", "--concurrency", "4",
                     "--duration", "1", "--warmup", "0.2", "--max-requests", "1000", "--json", dir.appendingPathComponent("t.json").path])
        let json = try JSONValue.parse([UInt8](Data(contentsOf: dir.appendingPathComponent("t.json"))))
        guard case .array(let runs)? = json["runs"], let r = runs.first else { return XCTFail("no runs") }
        XCTAssertGreaterThan(r["succeeded"]?.intValue ?? 0, 10)
        XCTAssertEqual(r["errors"]?.intValue, 0)
        XCTAssertEqual(r["variants"]?["mnist-8"].flatMap { $0.intValue }, r["succeeded"]?.intValue)

        // Without trusting the test certificate the run fails, naming certificate verification.
        assertFails(try run(["--host", "127.0.0.1", "--port", String(server.port), "--tls", "--images", try digitsFolder(),
                             "--model", "mnist-8", "--duration", "0.5", "--max-requests", "10"]),
                    naming: ["TLS handshake", "certificate verification failed"])
    }

    /// `--protocol v2`: Open Inference Protocol infer requests (binary data extension, classification
    /// extension) instead of JSON-RPC, tensor names read from the model's metadata.
    func testOpenInferenceProtocolClosedLoop() async throws {
        let server = try await TestServer.shared.value
        let dir = try temporaryFolder("load-v2").url
        _ = try run(["--port", String(server.port), "--images", try digitsFolder(), "--model", "mnist-8", "--protocol", "v2",
                     "-c", "2", "--concurrency", "4", "--duration", "1", "--warmup", "0.2", "--max-requests", "1000",
                     "--json", dir.appendingPathComponent("v2.json").path])
        let json = try JSONValue.parse([UInt8](Data(contentsOf: dir.appendingPathComponent("v2.json"))))
        guard case .array(let runs)? = json["runs"], let r = runs.first else { return XCTFail("no runs") }
        XCTAssertGreaterThan(r["succeeded"]?.intValue ?? 0, 10)
        XCTAssertEqual(r["errors"]?.intValue, 0)
        XCTAssertGreaterThan(r["achievedRate"]?.doubleValue ?? 0, 0)
        XCTAssertEqual(r["variants"]?["mnist-8"].flatMap { $0.intValue }, r["succeeded"]?.intValue, "v2 answers name the model that served")

        // A model the server does not have: its metadata cannot be read, and glimpse-load says so before sending.
        assertFails(try run(["--port", String(server.port), "--images", try digitsFolder(), "--model", "no-such-model",
                             "--protocol", "v2", "--duration", "0.5", "--max-requests", "10"]),
                    naming: ["GET /v2/models/no-such-model answered 404", "no loaded model"])
    }
}
