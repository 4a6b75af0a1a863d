import Foundation
import GlimpseTestSupport

/// The real `glimpse` executable (built beside the test bundle) run as a child process.
final class GlimpseProcess {
    let process = Process()
    let port: Int
    private let logFile: URL

    var base: String { "http://127.0.0.1:\(port)" }

    static var binary: URL {
        // The test bundle lives in .build/<config>/; the products are beside it.
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        if dir.lastPathComponent.hasSuffix(".xctest") { dir.deleteLastPathComponent() }
        return dir.appendingPathComponent("glimpse")
    }

    /// Starts `glimpse serve` on `port` (a free loopback port when nil) and waits until it listens.
    init(arguments: [String], port fixedPort: Int? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: GlimpseProcess.binary.path) else {
            throw TestServerError(description: "glimpse executable not found at \(GlimpseProcess.binary.path)")
        }
        port = try fixedPort ?? FreePort.pick()
        logFile = FileManager.default.temporaryDirectory.appendingPathComponent("glimpse-\(UUID().uuidString).log")
        FileManager.default.createFile(atPath: logFile.path, contents: nil)
        process.executableURL = GlimpseProcess.binary
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", String(port)] + arguments
        process.standardError = try FileHandle(forWritingTo: logFile)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let wait = TestTime.seconds(60)
        let deadline = Date().addingTimeInterval(wait)
        while Date() < deadline {
            if log.contains("listening on") { return }
            guard process.isRunning else { throw TestServerError(description: "glimpse exited: \(log)") }
            Thread.sleep(forTimeInterval: 0.1)
        }
        stop()
        throw TestServerError(description: "glimpse did not start within \(Int(wait)) s: \(log)")
    }

    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    @discardableResult
    func stop(timeout: TimeInterval = 30) -> Int32? {
        if process.isRunning { process.terminate() }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            return nil
        }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: logFile)
    }
}

