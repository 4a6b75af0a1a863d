import Foundation
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// `/metrics` of the real executable, checked by promtool and scraped by a real Prometheus server.
final class MetricsEndToEndTests: XCTestCase {
    func tool(_ name: String) throws -> String {
        for dir in ["/usr/bin", "/usr/local/bin"] where FileManager.default.isExecutableFile(atPath: "\(dir)/\(name)") {
            return "\(dir)/\(name)"
        }
        throw TestServerError(description: "\(name) is not installed (scripts/setup.sh --test installs Debian's prometheus package)")
    }

    func classify(_ server: GlimpseProcess, count: Int) throws {
        let image = try SharedData.data("images/digits/torchserve_4.png")
        for _ in 0..<count {
            let reply = try ExternalClient.curl(server.base + "/rpc", body: RPC.classifyBody(image: image, model: "mnist-8"))
            XCTAssertEqual(reply.status, 200)
        }
    }

    func testPromtoolAcceptsLiveMetrics() throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder()])
        defer { server.stop() }
        try classify(server, count: 3)
        _ = try ExternalClient.curl(server.base + "/rpc", body: Data(#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#.utf8))
        let metrics = try ExternalClient.curl(server.base + "/metrics", http2: false)
        XCTAssertEqual(metrics.status, 200)
        let text = String(decoding: metrics.body, as: UTF8.self)
        for name in ["glimpse_requests_total", "glimpse_request_stage_seconds_bucket", "glimpse_batch_size_bucket",
                     "glimpse_energy_joules_total", "glimpse_inference_energy_joules_bucket", "glimpse_process_resident_memory_bytes"] {
            XCTAssertTrue(text.contains(name), "missing \(name)")
        }
        XCTAssertTrue(text.contains(#"glimpse_requests_total{method="unknown""#), "unknown methods are labelled 'unknown'")

        // promtool finishes in well under a second; the limit is for a slow, loaded machine.
        let promtool = try ChildProcess.run(try tool("promtool"), ["check", "metrics"], timeLimit: 120, input: metrics.body)
        let report = promtool.log
        XCTAssertEqual(promtool.status, 0, report)
        XCTAssertEqual(report.trimmingCharacters(in: .whitespacesAndNewlines), "", "promtool reported problems")
    }

    func testRealPrometheusScrapesRequestsAndEnergy() throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder()])
        defer { server.stop() }
        let promPort = try FreePort.pick()
        let dir = try temporaryFolder("prom").url
        let config = """
        global:
          scrape_interval: 1s
        scrape_configs:
          - job_name: glimpse
            static_configs:
              - targets: ['127.0.0.1:\(server.port)']
        """
        try config.write(to: dir.appendingPathComponent("prometheus.yml"), atomically: true, encoding: .utf8)
        let prometheus = Process()
        prometheus.executableURL = URL(fileURLWithPath: try tool("prometheus"))
        prometheus.arguments = ["--config.file=\(dir.path)/prometheus.yml", "--storage.tsdb.path=\(dir.path)/data",
                                "--web.listen-address=127.0.0.1:\(promPort)", "--log.level=warn"]
        // Its log (warnings and errors only) goes into the failure messages: a Prometheus that cannot
        // start or scrape says why there.
        let logFile = dir.appendingPathComponent("prometheus.log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let logHandle = try FileHandle(forWritingTo: logFile)
        defer { try? logHandle.close() }
        func log() -> String { "; Prometheus log: " + ((try? String(contentsOf: logFile, encoding: .utf8)) ?? "") }
        prometheus.standardOutput = FileHandle.nullDevice
        prometheus.standardError = logHandle
        try prometheus.run()
        defer {
            // A Prometheus slow to shut down is killed, so the test's end does not wait on it.
            prometheus.terminate()
            try? waitUntil("Prometheus to exit", timeout: 30, poll: 0.05) { !prometheus.isRunning }
            if prometheus.isRunning { kill(prometheus.processIdentifier, SIGKILL) }
            prometheus.waitUntilExit()
        }

        func query(_ q: String) -> Double? {
            let url = "http://127.0.0.1:\(promPort)/api/v1/query?query=\(q.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? q)"
            guard let reply = try? ExternalClient.curl(url, http2: false), reply.status == 200,
                  let json = try? JSONValue.parse([UInt8](reply.body)),
                  case .array(let results)? = json["data"]?["result"], let first = results.first,
                  case .array(let value)? = first["value"], value.count == 2, let s = value[1].stringValue else { return nil }
            return Double(s)
        }
        func waitFor(_ q: String, above: Double, timeout: TimeInterval = 30) -> Double? {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if let v = query(q), v > above { return v }
                Thread.sleep(forTimeInterval: 0.5)
            }
            return nil
        }

        try classify(server, count: 2)
        let requests = "sum(glimpse_requests_total{method=\"classify\",outcome=\"ok\"})"
        guard let first = waitFor(requests, above: 1) else { return XCTFail("Prometheus never saw glimpse_requests_total" + log()) }
        guard let energy1 = waitFor("sum(glimpse_energy_joules_total)", above: 0) else { return XCTFail("no energy counter in Prometheus" + log()) }
        try classify(server, count: 5)
        let second = waitFor(requests, above: first)
        XCTAssertNotNil(second, "glimpse_requests_total did not increase in Prometheus" + log())
        XCTAssertGreaterThanOrEqual(second ?? 0, first + 5)
        XCTAssertNotNil(waitFor("sum(glimpse_energy_joules_total)", above: energy1), "energy counter did not increase" + log())
    }
}
