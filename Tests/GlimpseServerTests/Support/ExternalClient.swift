import Foundation

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
        let out = try run("/usr/bin/curl", args)
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
        return try run("/usr/bin/nghttp", ["-t", "60", "-H", "content-type: application/json", "-d", f.path, url])
    }

    static func run(_ tool: String, _ args: [String]) throws -> Data {
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            throw ClientError(description: "\(tool) is not installed (scripts/setup.sh installs it)")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw ClientError(description: "\(tool) exited with \(p.terminationStatus)") }
        return data
    }

    struct ClientError: Error, CustomStringConvertible {
        let description: String
    }
}
