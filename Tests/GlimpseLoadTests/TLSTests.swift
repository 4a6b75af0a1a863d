import Foundation
import GlimpseLoad
import XCTest

/// h2 over TLS against real TLS servers on loopback: nghttpd (h2 by ALPN) and `openssl s_server` (no ALPN),
/// with self-signed certificates made at test time.
final class TLSTests: XCTestCase {
    private var peers: TLSPeers!

    override func setUpWithError() throws {
        peers = try TLSPeers()
    }

    override func tearDown() {
        peers?.cleanUp()
        peers = nil
    }

    /// A certificate for localhost and 127.0.0.1, and nghttpd serving with it.
    private func nghttpd() throws -> (port: Int, certificate: String) {
        let (certificate, key) = try peers.makeCertificate(named: "server", altNames: "DNS:localhost,IP:127.0.0.1")
        return (try peers.startNghttpd(certificate: certificate, key: key), certificate)
    }

    private func assertTLSError(_ expression: @autoclosure () throws -> some Any, containing text: String,
                                file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try expression(), file: file, line: line) { error in
            XCTAssertEqual((error as? H2Error)?.kind, .tls, "\(error)", file: file, line: line)
            XCTAssertTrue((error as? H2Error)?.detail.contains(text) == true, "\(error) does not say \"\(text)\"", file: file, line: line)
        }
    }

    func testClosedLoopRunOverTLSWithCACertVerifies() throws {
        let (port, certificate) = try nghttpd()
        let tls = TLSOptions(caFile: certificate)
        let config = LoadConfiguration(host: "127.0.0.1", port: port, connections: 2, mode: .closed(concurrency: 16), duration: 10,
                                       warmup: 0, maxRequests: 400, requestTimeout: 10, tls: tls)
        let started = Date()
        let r = try LoadRunner.run(config, corpus: .plain(path: "/index.html"))
        XCTAssertEqual(r.requests, 400)
        XCTAssertEqual(r.succeeded, 400)
        XCTAssertEqual(r.byStatus["200"], 400)
        XCTAssertEqual(r.notes, [])
        XCTAssertLessThan(Date().timeIntervalSince(started), 8)

        // By host name too; bodies larger than the read buffer and many records, both ways, arrive intact.
        let client = try H2Client(host: "localhost", port: port, requestTimeout: 10, tls: tls)
        defer { client.close() }
        let small = try client.getBlocking(path: "/index.html")
        XCTAssertEqual(small.status, 200)
        XCTAssertEqual(small.bodyString, "hello over tls\n")
        let big = try client.getBlocking(path: "/big.bin")
        XCTAssertEqual(big.status, 200)
        XCTAssertEqual(big.body.count, TLSPeers.bigBody.count)
        XCTAssertTrue(big.body == TLSPeers.bigBody, "3 MB body differs")
        let upload = Array(TLSPeers.bigBody.prefix(1_000_000))
        let echoed = try client.postBlocking(path: "/echo", body: upload)
        XCTAssertEqual(echoed.status, 200)
        XCTAssertTrue(echoed.body == upload, "echoed 1 MB body differs")
    }

    func testVerificationWithoutTrustedCAFailsNamingCertificateVerification() throws {
        let (port, certificate) = try nghttpd()
        // The system store does not hold the self-signed certificate.
        assertTLSError(try H2Client(host: "127.0.0.1", port: port, tls: TLSOptions()),
                       containing: "certificate verification failed")
        let config = LoadConfiguration(host: "127.0.0.1", port: port, connections: 1, mode: .closed(concurrency: 1), duration: 1,
                                       warmup: 0, tls: TLSOptions())
        assertTLSError(try LoadRunner.run(config, corpus: .plain(path: "/index.html")), containing: "certificate verification failed")
        // A trusted certificate for another name fails the name check.
        let (other, otherKey) = try peers.makeCertificate(named: "other", altNames: "DNS:glimpse.test")
        let otherPort = try peers.startNghttpd(certificate: other, key: otherKey)
        assertTLSError(try H2Client(host: "127.0.0.1", port: otherPort, tls: TLSOptions(caFile: other)),
                       containing: "certificate verification failed: IP address mismatch")
        assertTLSError(try H2Client(host: "localhost", port: otherPort, tls: TLSOptions(caFile: other)),
                       containing: "certificate verification failed: hostname mismatch")
        // A CA file that cannot be read is named.
        assertTLSError(try H2Client(host: "127.0.0.1", port: port, tls: TLSOptions(caFile: certificate + ".missing")),
                       containing: "cannot read CA file")
    }

    func testInsecureSkipsVerification() throws {
        let (port, _) = try nghttpd()
        let insecure = TLSOptions(verifyCertificate: false)
        let client = try H2Client(host: "127.0.0.1", port: port, requestTimeout: 10, tls: insecure)
        defer { client.close() }
        let response = try client.getBlocking(path: "/index.html")
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.bodyString, "hello over tls\n")
        XCTAssertEqual(try client.getBlocking(path: "/missing").status, 404)
        let config = LoadConfiguration(host: "127.0.0.1", port: port, connections: 1, mode: .closed(concurrency: 4), duration: 10,
                                       warmup: 0, maxRequests: 100, requestTimeout: 10, tls: insecure)
        let r = try LoadRunner.run(config, corpus: .plain(path: "/index.html"))
        XCTAssertEqual(r.succeeded, 100)
    }

    func testServerWithoutH2InALPNFailsClearly() throws {
        let (certificate, key) = try peers.makeCertificate(named: "http1", altNames: "DNS:localhost,IP:127.0.0.1")
        let port = try peers.startServerWithoutALPN(certificate: certificate, key: key)
        // Verification on and passing: what fails is the protocol.
        assertTLSError(try H2Client(host: "127.0.0.1", port: port, tls: TLSOptions(caFile: certificate)),
                       containing: "did not select HTTP/2 in ALPN")
    }

    func testPlainServerGivesATLSErrorNotACrash() throws {
        let server = try TinyH2Server { _, _, _ in (200, [], []) }  // h2c only
        defer { server.stop() }
        assertTLSError(try H2Client(host: "127.0.0.1", port: server.port, tls: TLSOptions(verifyCertificate: false)),
                       containing: "TLS handshake with 127.0.0.1:\(server.port)")
    }
}
