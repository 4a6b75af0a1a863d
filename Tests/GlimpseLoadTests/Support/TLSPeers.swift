import Foundation
import GlimpseTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Real TLS peers for the TLS tests, in a temporary folder removed by `cleanUp`: self-signed certificates
/// made with the `openssl` CLI, `nghttpd` serving h2 over TLS, and `openssl s_server -www` (TLS without
/// ALPN, so no h2). A missing tool is an error that names the package to install, never a skip.
final class TLSPeers {
    let temporary: TemporaryFolder
    var directory: URL { temporary.url }
    /// The document root nghttpd serves: `index.html` ("hello over tls\n") and `big.bin` (3 MB).
    let docs: URL
    private var processes: [Process] = []

    init() throws {
        temporary = try TemporaryFolder("tls")
        docs = temporary.appending("docs")
        try FileManager.default.createDirectory(at: docs, withIntermediateDirectories: true)
        try Data("hello over tls\n".utf8).write(to: docs.appendingPathComponent("index.html"))
        try Data(TLSPeers.bigBody).write(to: docs.appendingPathComponent("big.bin"))
    }

    /// 3 MB of a non-repeating pattern: many TLS records and more than one read loop's worth of plaintext.
    static let bigBody: [UInt8] = (0..<3_000_000).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }

    /// Stops the servers and removes the folder.
    func cleanUp() {
        for process in processes where process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        temporary.remove()
    }

    /// A self-signed P-256 certificate whose subjectAltName is `altNames` (e.g. "DNS:localhost,IP:127.0.0.1").
    /// Returns the paths of the certificate (PEM, also usable as the CA file) and of its key.
    func makeCertificate(named name: String, altNames: String) throws -> (certificate: String, key: String) {
        let certificate = directory.appendingPathComponent("\(name).pem").path
        let key = directory.appendingPathComponent("\(name)-key.pem").path
        let result = try ChildProcess.run(try TLSPeers.tool("openssl", package: "openssl"),
                                          ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                           "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=glimpse-load test",
                                           "-addext", "subjectAltName=\(altNames)"], timeLimit: 120)
        guard result.status == 0 else { throw PeerError("openssl req failed (status \(result.status)): \(result.stderr)") }
        return (certificate, key)
    }

    /// nghttpd serving `docs` over TLS (h2 by ALPN) with `--echo-upload`; returns its port.
    func startNghttpd(certificate: String, key: String) throws -> Int {
        let nghttpd = try TLSPeers.tool("nghttpd", package: "nghttp2-server")
        return try start(nghttpd) { port in ["--echo-upload", "-d", self.docs.path, String(port), key, certificate] }
    }

    /// `openssl s_server -www`: TLS with no ALPN (it can only speak HTTP/1); returns its port.
    func startServerWithoutALPN(certificate: String, key: String) throws -> Int {
        let openssl = try TLSPeers.tool("openssl", package: "openssl")
        return try start(openssl) { port in ["s_server", "-accept", String(port), "-cert", certificate, "-key", key, "-www", "-quiet"] }
    }

    /// Starts `executable` on a free port (up to 3 tries), waiting up to 5 s for it to accept connections.
    private func start(_ executable: String, arguments: (Int) -> [String]) throws -> Int {
        for _ in 0..<3 {
            let port = try FreePort.pick()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments(port)
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            processes.append(process)
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning && Date() < deadline {
                if TLSPeers.accepts(port) { return port }
                Thread.sleep(forTimeInterval: 0.02)
            }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
        throw PeerError("\(executable) did not start listening")
    }

    private static func tool(_ name: String, package: String) throws -> String {
        let candidates = ["/usr/bin/\(name)", "/usr/sbin/\(name)", "/usr/local/bin/\(name)"]
        guard let path = candidates.first(where: FileManager.default.isExecutableFile) else {
            throw PeerError("\(name) is not installed: scripts/setup.sh --test installs Debian's \(package)")
        }
        return path
    }

    /// Whether a TCP connection to 127.0.0.1:`port` is accepted (closed at once).
    private static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &addr) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

struct PeerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
