import Foundation

/// A child process a test runs with a time limit: its output and error streams go to files (no pipe
/// can fill and stall it), and a run past the limit is killed and reported with what it printed.
public enum ChildProcess {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public struct Result {
        public let status: Int32
        /// The output stream as bytes: some tools (gzip -dc) print binary data.
        public let stdoutData: Data
        public let stderr: String
        public var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
        /// Both streams, for failure messages.
        public var log: String { stdout + (stderr.isEmpty ? "" : "\n[stderr]\n" + stderr) }
    }

    /// Runs `executable` with `arguments` and waits at most `timeLimit` seconds (scaled by
    /// `GLIMPSE_TEST_TIME_SCALE`). Throws when it cannot start or runs past the limit; a non-zero exit
    /// is returned in `status`, not thrown. `input`, when given, is the child's standard input (from a
    /// file, like its output, so a child that stops reading cannot stall the test); else it reads nothing.
    public static func run(_ executable: String, _ arguments: [String], timeLimit: Double,
                           environment: [String: String]? = nil, currentDirectory: URL? = nil, input: Data? = nil) throws -> Result {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("glimpse-child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let outURL = folder.appendingPathComponent("stdout"), errURL = folder.appendingPathComponent("stderr")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        defer {
            try? out.close()
            try? err.close()
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        process.standardOutput = out
        process.standardError = err
        var inHandle: FileHandle?
        defer { try? inHandle?.close() }
        if let input {
            let inURL = folder.appendingPathComponent("stdin")
            try input.write(to: inURL)
            inHandle = try FileHandle(forReadingFrom: inURL)
            process.standardInput = inHandle
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        do {
            try process.run()
        } catch {
            throw Failure(description: "\(executable) did not start: \(error)")
        }
        let limit = TestTime.seconds(timeLimit)
        let deadline = Date().addingTimeInterval(limit)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        let bytes = { (url: URL) in (try? Data(contentsOf: url)) ?? Data() }
        let read = { (url: URL) in String(decoding: bytes(url), as: UTF8.self) }
        if process.isRunning {
            process.terminate()
            let grace = Date().addingTimeInterval(2)
            while process.isRunning && Date() < grace { usleep(5_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            throw Failure(description: "\((executable as NSString).lastPathComponent) \(arguments.joined(separator: " ")) "
                + "ran past its \(limit) s limit and was killed; stdout: \(read(outURL)) stderr: \(read(errURL))")
        }
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdoutData: bytes(outURL), stderr: read(errURL))
    }
}
