import Foundation
import XCTest

/// The real `glimpse` executable checked against `openapi/openapi.yaml` by `scripts/api-check.sh`:
/// openapi-spec-validator on the document, then a bounded schemathesis run over every operation (no 5xx
/// other than the documented 503s; status codes, content types, headers and bodies as documented).
/// Needs python3 with the venv module; the first run installs the pinned tools from PyPI into
/// `.build/api-venv`, later runs reuse it.
final class OpenAPIConformanceTests: XCTestCase {
    /// The repository root (this file is `Tests/GlimpseServerTests/OpenAPIConformanceTests.swift`).
    static let repositoryRoot: URL = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The script is killed after this long.
    static let scriptTimeoutSeconds = 240

    /// Full path of an executable found on `PATH` (or in the usual system folders).
    static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let dirs = path.split(separator: ":").map(String.init) + ["/usr/local/bin", "/usr/bin", "/bin"]
        for dir in dirs where !dir.isEmpty {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    func testLiveServerConformsToOpenAPIDocument() throws {
        guard Self.executable("python3") != nil else {
            XCTFail("python3 is not installed: scripts/api-check.sh needs Python 3.9+ with the venv module "
                + "(Debian: apt-get install python3 python3-venv)")
            return
        }
        let script = Self.repositoryRoot.appendingPathComponent("scripts/api-check.sh")
        guard FileManager.default.fileExists(atPath: script.path) else {
            XCTFail("missing \(script.path)")
            return
        }

        // The check runs with a `user` API key: generated calls can then never load or unload models
        // (admin methods answer -32003), and the authenticated path is the one exercised.
        let fm = FileManager.default
        let key = "openapi-check-\(UUID().uuidString)"
        let keyFile = fm.temporaryDirectory.appendingPathComponent("glimpse-openapi-keys-\(UUID().uuidString).txt")
        try "\(key) user openapi-check\n".write(to: keyFile, atomically: true, encoding: .utf8)
        defer { try? fm.removeItem(at: keyFile) }

        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder(), "--api-keys", keyFile.path])
        defer { server.stop() }

        let outputFile = fm.temporaryDirectory.appendingPathComponent("glimpse-api-check-\(UUID().uuidString).log")
        _ = fm.createFile(atPath: outputFile.path, contents: nil)
        defer { try? fm.removeItem(at: outputFile) }
        let output = try FileHandle(forWritingTo: outputFile)

        let process = Process()
        if let timeout = Self.executable("timeout") {
            // coreutils timeout signals the script's whole process group (venv pip, schemathesis).
            process.executableURL = URL(fileURLWithPath: timeout)
            process.arguments = ["--kill-after=10", String(Self.scriptTimeoutSeconds), "/bin/bash", script.path, server.base]
        } else {
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = [script.path, server.base]
        }
        var environment = ProcessInfo.processInfo.environment
        environment["API_CHECK_TOKEN"] = key
        process.environment = environment
        process.currentDirectoryURL = Self.repositoryRoot
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output

        let started = Date()
        try process.run()
        // Our own bound too, in case `timeout` is missing or cannot stop the script.
        let deadline = started.addingTimeInterval(TimeInterval(Self.scriptTimeoutSeconds + 20))
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.2) }
        let killed = process.isRunning
        if killed {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? output.close()
        let elapsed = Date().timeIntervalSince(started)
        let text = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
        let status = process.terminationStatus

        if killed || status == 124 || status == 137 {
            XCTFail("scripts/api-check.sh did not finish within \(Self.scriptTimeoutSeconds) s; its output:\n\(text)")
            return
        }
        XCTAssertEqual(status, 0, """
            scripts/api-check.sh \(server.base) failed with exit status \(status) after \(Int(elapsed)) s; its output:
            \(text)
            --- end of glimpse server log ---
            \(String(server.log.suffix(4000)))
            """)
        if status == 0 {
            let summary = text.split(separator: "\n").filter { $0.contains("generated,") || $0.contains("No issues found") }
            print("api-check passed in \(Int(elapsed)) s: \(summary.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "; "))")
        }
    }
}
