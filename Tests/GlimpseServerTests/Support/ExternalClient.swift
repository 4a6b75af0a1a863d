import Foundation
import GlimpseTestSupport

/// Runs real HTTP clients we did not write (curl, nghttp) against the test server.
enum ExternalClient {
    struct Reply {
        var status: Int
        var body: Data
        var httpVersion: String
        var headers: String
    }

    /// `curl` with the body from a temporary file. `http2` uses `--http2-prior-knowledge` (h2c).
    static func curl(_ url: String, body: Data? = nil, contentType: String = "application/json", http2: Bool = true,
                     extra: [String] = []) throws -> Reply {
        let dir = FileManager.default.temporaryDirectory
        let headerFile = dir.appendingPathComponent("glimpse-curl-\(UUID().uuidString).h")
        defer { try? FileManager.default.removeItem(at: headerFile) }
        var args = ["-s", "-S", "--max-time", "60", "-D", headerFile.path, "-w", "\n%{http_code} %{http_version}"]
        if http2 { args.append("--http2-prior-knowledge") }
        var bodyFile: URL?
        if let body {
            let f = dir.appendingPathComponent("glimpse-curl-\(UUID().uuidString).body")
            try body.write(to: f)
            bodyFile = f
            args += ["-H", "Content-Type: \(contentType)", "--data-binary", "@\(f.path)"]
        }
        defer { if let bodyFile { try? FileManager.default.removeItem(at: bodyFile) } }
        args += extra
        args.append(url)
        // curl gives up after its own --max-time; the limit here only catches a curl that hangs anyway.
        let out = try run("/usr/bin/curl", args, timeLimit: 120)
        guard let newline = out.lastIndex(of: UInt8(ascii: "\n")) else { throw ClientError(description: "no output from curl") }
        let trailer = String(decoding: out[(newline + 1)...], as: UTF8.self).split(separator: " ")
        guard trailer.count == 2, let status = Int(trailer[0]) else { throw ClientError(description: "bad curl trailer") }
        let headers = (try? String(contentsOf: headerFile, encoding: .utf8)) ?? ""
        return Reply(status: status, body: Data(out[..<newline]), httpVersion: String(trailer[1]), headers: headers)
    }

    /// `nghttp` (nghttp2's client) POSTing `body`; returns the response body.
    static func nghttp(_ url: String, body: Data) throws -> Data {
        let f = FileManager.default.temporaryDirectory.appendingPathComponent("glimpse-nghttp-\(UUID().uuidString).json")
        try body.write(to: f)
        defer { try? FileManager.default.removeItem(at: f) }
        return try run("/usr/bin/nghttp", ["-t", "60", "-H", "content-type: application/json", "-d", f.path, url], timeLimit: 120)
    }

    /// Runs `tool` to completion and returns its output; a non-zero exit throws a `ClientError` that
    /// carries the exit status and what the tool printed on stderr, so a caller can check why it failed.
    /// The tools here (the Python clients, glimpse-load, openssl) finish in seconds; `timeLimit`
    /// (scaled by GLIMPSE_TEST_TIME_SCALE) leaves room for a slow machine and turns a hang into a
    /// failure that names the command.
    static func run(_ tool: String, _ args: [String], timeLimit: Double = 300) throws -> Data {
        let result = try output(tool, args, timeLimit: timeLimit)
        guard result.status == 0 else {
            throw ClientError(description: "\(tool) exited with \(result.status): \(result.stderr)", status: result.status,
                              stderr: result.stderr)
        }
        return result.stdoutData
    }

    /// `run` without the check of the exit status: the status, stdout and stderr, for callers that
    /// expect a failure and check its reason.
    static func output(_ tool: String, _ args: [String], timeLimit: Double = 300) throws -> ChildProcess.Result {
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            throw ClientError(description: "\(tool) is not installed (scripts/setup.sh installs it)")
        }
        do {
            return try ChildProcess.run(tool, args, timeLimit: timeLimit)
        } catch let failure as ChildProcess.Failure {
            throw ClientError(description: failure.description)
        }
    }

    struct ClientError: Error, CustomStringConvertible {
        let description: String
        /// The tool's exit status and stderr when it ran and failed; nil and empty otherwise.
        var status: Int32? = nil
        var stderr: String = ""
    }
}
