import Foundation
import GlimpseLoad
import GlimpseTestSupport

/// Real HAProxy (Debian's `haproxy`) run with the shipped `deploy/haproxy/haproxy.cfg`, its `server` lines
/// replaced by the test's replicas, as `scripts/cluster.sh` does.
final class HAProxyProcess {
    static let binary = "/usr/sbin/haproxy"
    static let repositoryRoot = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    let process = Process()
    let port: Int
    let statsPort: Int
    /// The TLS listener's port (it listens only when GLIMPSE_LB_CERT is given).
    let tlsPort: Int
    let serverNames: [String]
    private let folder: URL

    /// The shipped configuration with one `server glimpseN 127.0.0.1:PORT` line per replica port, from
    /// `deploy/haproxy/render.sh` (as `scripts/cluster.sh` makes it).
    static func configuration(replicaPorts: [Int]) throws -> String {
        let render = repositoryRoot.appendingPathComponent("deploy/haproxy/render.sh").path
        return String(decoding: try ExternalClient.run("/bin/bash", [render] + replicaPorts.map(String.init)), as: UTF8.self)
    }

    init(replicaPorts: [Int], extraEnvironment: [String: String] = [:]) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw TestServerError(description: "\(Self.binary) is not installed (scripts/setup.sh --test installs haproxy)")
        }
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("glimpse-haproxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let config = folder.appendingPathComponent("haproxy.cfg")
        try Self.configuration(replicaPorts: replicaPorts).write(to: config, atomically: true, encoding: .utf8)
        port = try FreePort.pick()
        statsPort = try FreePort.pick()
        tlsPort = try FreePort.pick()
        serverNames = replicaPorts.indices.map { "glimpse\($0 + 1)" }
        var environment = ProcessInfo.processInfo.environment
        environment["GLIMPSE_LB_ADDR"] = "127.0.0.1"
        environment["GLIMPSE_LB_PORT"] = String(port)
        environment["GLIMPSE_LB_STATS_PORT"] = String(statsPort)
        environment["GLIMPSE_LB_THREADS"] = "1"
        environment["GLIMPSE_LB_TLS_PORT"] = String(tlsPort)
        environment.merge(extraEnvironment) { $1 }
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["-db", "-f", config.path]
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        let log = folder.appendingPathComponent("haproxy.log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
    }

    var log: String { (try? String(contentsOf: folder.appendingPathComponent("haproxy.log"), encoding: .utf8)) ?? "" }

    /// HAProxy's own Prometheus text (`/metrics` on the stats port), over HTTP/1.1.
    func metrics() throws -> String {
        String(decoding: try ExternalClient.curl("http://127.0.0.1:\(statsPort)/metrics", http2: false).body, as: UTF8.self)
    }

    /// The sum of a metric's samples in HAProxy's /metrics for the `glimpse` backend (e.g. its retries).
    func backendCounter(_ name: String) throws -> Double {
        try metrics().split(separator: "\n").filter { $0.hasPrefix(name + "{") && $0.contains("proxy=\"glimpse\"") }
            .reduce(0) { $0 + (Double($1.split(separator: " ").last ?? "") ?? 0) }
    }

    /// The servers HAProxy reports UP (`haproxy_server_status{state="UP"} 1`).
    func serversUp() -> Set<String> {
        guard let text = try? metrics() else { return [] }
        var up = Set<String>()
        for line in text.split(separator: "\n") where line.hasPrefix("haproxy_server_status{") && line.contains("state=\"UP\"") && line.hasSuffix(" 1") {
            if let name = serverNames.first(where: { line.contains("server=\"\($0)\"") }) { up.insert(name) }
        }
        return up
    }

    /// Waits (bounded) until HAProxy reports exactly `expected` UP.
    func waitUntilUp(_ expected: Set<String>, timeout: TimeInterval = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            guard process.isRunning else { throw TestServerError(description: "haproxy exited: \(log)") }
            if serversUp() == expected { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw TestServerError(description: "HAProxy did not report \(expected.sorted()) UP within \(timeout) s (UP: \(serversUp().sorted())): \(log)")
    }

    func stop() {
        if process.isRunning { process.terminate() }
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: folder)
    }
}

/// What a load run through the balancer saw: every answer's status, and the failures in words.
struct LoadTally: Sendable {
    var statuses: [Int: Int] = [:]
    var failures: [String] = []
    var sent: Int { statuses.values.reduce(0, +) + failures.count }
    var ok: Int { statuses[200] ?? 0 }

    mutating func merge(_ other: LoadTally) {
        statuses.merge(other.statuses, uniquingKeysWith: +)
        failures += other.failures
    }
}

/// Closed-loop load: `workers` callers over `connections` HTTP/2 connections, each posting `body` to /rpc
/// back to back until `stop()` returns true, `maxSeconds` pass or `maxRequests` have been sent.
enum BalancedLoad {
    static func run(port: Int, body: [UInt8], connections: Int = 2, workers: Int = 8, maxSeconds: Double = 60,
                    maxRequests: Int = 200_000, stop: @escaping @Sendable () -> Bool) async throws -> LoadTally {
        let clients = try (0..<connections).map { _ in try H2Client(host: "127.0.0.1", port: port, requestTimeout: 30) }
        defer { clients.forEach { $0.close() } }
        let deadline = Date().addingTimeInterval(maxSeconds)
        let perWorker = max(1, maxRequests / workers)
        return await withTaskGroup(of: LoadTally.self) { group in
            for w in 0..<workers {
                let client = clients[w % clients.count]
                group.addTask {
                    var tally = LoadTally()
                    for _ in 0..<perWorker {
                        if stop() || Date() > deadline { break }
                        do {
                            let r = try await client.post(path: "/rpc", headers: [("content-type", "application/json")], body: body)
                            tally.statuses[r.status, default: 0] += 1
                            if r.status != 200 && tally.failures.count < 5 {
                                tally.failures.append("HTTP \(r.status): \(String(decoding: r.body.prefix(200), as: UTF8.self))")
                            }
                        } catch {
                            tally.failures.append("\(error)")
                        }
                    }
                    return tally
                }
            }
            var total = LoadTally()
            for await t in group { total.merge(t) }
            return total
        }
    }
}

/// A flag set by one task and read by others.
final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    func set() { lock.lock(); value = true; lock.unlock() }
}
