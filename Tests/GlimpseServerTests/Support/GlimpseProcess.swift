import Foundation

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

    /// Starts `glimpse serve` on a free loopback port and waits until it listens.
    init(arguments: [String]) throws {
        guard FileManager.default.isExecutableFile(atPath: GlimpseProcess.binary.path) else {
            throw TestServerError(description: "glimpse executable not found at \(GlimpseProcess.binary.path)")
        }
        port = try FreePort.pick()
        logFile = FileManager.default.temporaryDirectory.appendingPathComponent("glimpse-\(UUID().uuidString).log")
        FileManager.default.createFile(atPath: logFile.path, contents: nil)
        process.executableURL = GlimpseProcess.binary
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", String(port)] + arguments
        process.standardError = try FileHandle(forWritingTo: logFile)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if log.contains("listening on") { return }
            guard process.isRunning else { throw TestServerError(description: "glimpse exited: \(log)") }
            Thread.sleep(forTimeInterval: 0.1)
        }
        stop()
        throw TestServerError(description: "glimpse did not start within 60 s: \(log)")
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

/// A loopback TCP port that is free right now.
enum FreePort {
    static func pick() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestServerError(description: "socket() failed") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard bound else { throw TestServerError(description: "bind() failed") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}
