import Foundation
import GlimpseLoad
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// Glimpse replicas behind the real HAProxy with the shipped configuration (`deploy/haproxy/haproxy.cfg`):
/// spreading, a replica killed, drained and restarted in turn under load with no failed request, and overload.
final class HAProxyClusterTests: XCTestCase {
    /// Replicas serving mnist-8 on one engine thread each, with the drain delay `scripts/cluster.sh` uses.
    struct Cluster {
        var replicas: [GlimpseProcess]
        let ports: [Int]
        let arguments: [String]
        let lb: HAProxyProcess

        init(count: Int, models: String, extra: [String] = [], lbEnvironment: [String: String] = [:]) throws {
            arguments = ["--models", models, "--threads", "1", "--drain-delay-s", "1"] + extra
            var started: [GlimpseProcess] = []
            for _ in 0..<count { started.append(try GlimpseProcess(arguments: arguments)) }
            replicas = started
            ports = started.map(\.port)
            lb = try HAProxyProcess(replicaPorts: ports, extraEnvironment: lbEnvironment)
            try lb.waitUntilUp(Set(lb.serverNames))
        }

        /// Starts replica `i` again on its port, and waits until HAProxy takes it back.
        mutating func restart(_ i: Int) throws {
            replicas[i] = try GlimpseProcess(arguments: arguments, port: ports[i])
            try lb.waitUntilUp(Set(lb.serverNames))
        }

        func stop() {
            lb.stop()
            for r in replicas { r.stop() }
        }
    }

    func modelFolder(squeezenet: Bool = false) throws -> String {
        let dir = try temporaryFolder("haproxy-models").url
        try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("mnist-8.onnx").path,
                                                   withDestinationPath: try SharedData.path("models/mnist-8.onnx"))
        try #"{"preprocessing": "mnist"}"#.write(to: dir.appendingPathComponent("mnist-8.json"), atomically: true, encoding: .utf8)
        if squeezenet {
            try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("squeezenet1.1.onnx").path,
                                                       withDestinationPath: try SharedData.path("models/squeezenet1.1.onnx"))
            try #"{"preprocessing": "imagenet"}"#.write(to: dir.appendingPathComponent("squeezenet1.1.json"), atomically: true, encoding: .utf8)
        }
        return dir.path
    }

    static func classifyBody() throws -> [UInt8] {
        [UInt8](RPC.classifyBody(image: try SharedData.data("images/digits/torchserve_3.png"), model: "mnist-8"))
    }

    /// classify calls a replica answered, from its own /metrics.
    static func classifyCount(_ replica: GlimpseProcess) throws -> Int {
        let text = String(decoding: try ExternalClient.curl(replica.base + "/metrics", http2: false).body, as: UTF8.self)
        var total = 0.0
        for line in text.split(separator: "\n") where line.hasPrefix("glimpse_requests_total{") && line.contains("method=\"classify\"") {
            total += Double(line.split(separator: " ").last ?? "") ?? 0
        }
        return Int(total)
    }

    static func assertNoFailure(_ tally: LoadTally, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(tally.ok, tally.sent, "\(what): \(tally.sent - tally.ok) of \(tally.sent) failed: \(tally.statuses) \(tally.failures.prefix(5))",
                       file: file, line: line)
    }

    func testRequestsSpreadAndAReplicaKilledMidLoadLosesNothing() async throws {
        // With a certificate, HAProxy also speaks h2 and HTTP/1.1 over TLS (ALPN).
        let tls = try temporaryFolder("haproxy-tls")
        let cert = tls.appending("cert.pem").path, key = tls.appending("key.pem").path
        _ = try ExternalClient.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                                        "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                                                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        let pem = tls.appending("haproxy.pem")
        try (try String(contentsOfFile: cert, encoding: .utf8) + String(contentsOfFile: key, encoding: .utf8)).write(to: pem, atomically: true, encoding: .utf8)
        let cluster = try Cluster(count: 2, models: try modelFolder(), lbEnvironment: ["GLIMPSE_LB_CERT": pem.path])
        defer { cluster.stop() }
        let body = try Self.classifyBody()
        for (flag, version) in [("--http2", "2"), ("--http1.1", "1.1")] {
            let reply = try ExternalClient.curl("https://127.0.0.1:\(cluster.lb.tlsPort)/rpc", body: Data(body), http2: false,
                                                extra: [flag, "--cacert", cert])
            XCTAssertEqual(reply.status, 200, "classify over TLS (\(flag))")
            XCTAssertEqual(reply.httpVersion, version, "ALPN chose \(reply.httpVersion) for \(flag)")
            XCTAssertNotNil(try JSONValue.parse([UInt8](reply.body))["result"], String(decoding: reply.body, as: UTF8.self))
        }
        // Both replicas get a fair share of the traffic.
        let earlier = try cluster.replicas.map(Self.classifyCount)
        let warm = try await BalancedLoad.run(port: cluster.lb.port, body: body, maxSeconds: 2, maxRequests: 400) { false }
        Self.assertNoFailure(warm, "spread")
        let counts = try zip(cluster.replicas.map(Self.classifyCount), earlier).map { $0 - $1 }
        XCTAssertEqual(counts.reduce(0, +), warm.ok, "the replicas' own counts add up to what the client got: \(counts)")
        for c in counts { XCTAssertGreaterThan(Double(c), 0.25 * Double(warm.ok), "uneven spread over the replicas: \(counts)") }
        // The dashboard's load-balancer panels select series this HAProxy exports.
        let live = DashboardTests.liveSeries(try cluster.lb.metrics())
        let checked = DashboardTests.assertSeriesExist(in: try DashboardTests.loadDashboard(), live: live, source: "HAProxy's /metrics") {
            $0.hasPrefix("haproxy_")
        }
        XCTAssertGreaterThanOrEqual(checked, 6)

        // SIGKILL one replica in the middle of a run: HAProxy retries what it had in flight elsewhere.
        let stop = StopFlag()
        let victim = cluster.replicas[0]
        let lbPort = cluster.lb.port
        async let tally = BalancedLoad.run(port: lbPort, body: body, maxSeconds: 20) { stop.isSet }
        try await Task.sleep(nanoseconds: 1_000_000_000)
        let before = try Self.classifyCount(victim)
        // Frozen first, so calls HAProxy sends it in the next 300 ms are still in flight when it dies. A kill
        // at a random moment misses every call now and then: mnist-8 answers in about 0.1 ms.
        kill(victim.process.processIdentifier, SIGSTOP)
        try await Task.sleep(nanoseconds: 300_000_000)
        kill(victim.process.processIdentifier, SIGKILL)
        try await Task.sleep(nanoseconds: 2_000_000_000)
        stop.set()
        let result = try await tally
        Self.assertNoFailure(result, "SIGKILL under load")
        XCTAssertGreaterThan(before, 20, "the killed replica was serving when it died")
        XCTAssertGreaterThan(result.ok, 200)
        XCTAssertEqual(cluster.lb.serversUp(), ["glimpse2"], "HAProxy took the dead replica out")
        // Calls were in flight on the killed replica, and HAProxy retried them (L7 retries, redispatched).
        let retries = try cluster.lb.backendCounter("haproxy_backend_retry_warnings_total")
        print("HAProxy retries after the SIGKILL: \(Int(retries)); requests answered: \(result.ok)")
        XCTAssertGreaterThan(retries, 0, "nothing was retried: the kill did not hit a request in flight")
    }

    func testDrainAndRollingRestartUnderLoadLoseNothing() async throws {
        var cluster = try Cluster(count: 2, models: try modelFolder())
        defer { cluster.stop() }
        let body = try Self.classifyBody()
        let stop = StopFlag()
        let lbPort = cluster.lb.port
        async let tally = BalancedLoad.run(port: lbPort, body: body, maxSeconds: 90) { stop.isSet }
        try await Task.sleep(nanoseconds: 500_000_000)
        // Replica 1 drained and restarted, then every replica in turn (1 again, then 2).
        for i in [0, 0, 1] {
            let replica = cluster.replicas[i]
            kill(replica.process.processIdentifier, SIGTERM)
            try await Task.sleep(nanoseconds: 200_000_000)
            // Readiness turns false first, while the port still serves.
            let ready = try ExternalClient.curl(replica.base + "/readyz", http2: false)
            XCTAssertEqual(ready.status, 503, "a draining replica is not ready")
            let live = try ExternalClient.curl(replica.base + "/healthz", http2: false)
            XCTAssertEqual(live.status, 200, "a replica in its drain delay still accepts connections")
            XCTAssertEqual(replica.stop(timeout: 30), 0, "the drained replica exits cleanly: \(replica.log.suffix(400))")
            try cluster.restart(i)
            // The restarted replica takes traffic again.
            let restarted = cluster.replicas[i]
            let deadline = Date().addingTimeInterval(10)
            while try Self.classifyCount(restarted) == 0 && Date() < deadline { try await Task.sleep(nanoseconds: 100_000_000) }
            XCTAssertGreaterThan(try Self.classifyCount(restarted), 0, "replica \(i + 1) got no traffic after its restart")
        }
        stop.set()
        let result = try await tally
        Self.assertNoFailure(result, "drain and rolling restart")
        XCTAssertGreaterThan(result.ok, 300)
    }

    func testOverloadAnswers503WithRetryAfterNotAHang() async throws {
        // One-image batches and a queue of one: a burst of 48 at once is more than both replicas take.
        let cluster = try Cluster(count: 2, models: try modelFolder(squeezenet: true), extra: ["--max-queue", "1", "--max-batch", "1"])
        defer { cluster.stop() }
        let image = try SharedData.data("images/imagenet/kitten_small.jpg")
        let body = [UInt8](RPC.classifyBody(image: image, model: "squeezenet1.1"))
        let client = try H2Client(host: "127.0.0.1", port: cluster.lb.port, requestTimeout: 30)
        defer { client.close() }
        let started = Date()
        let responses = try await withThrowingTaskGroup(of: H2Response.self) { group in
            for _ in 0..<48 {
                group.addTask { try await client.post(path: "/rpc", headers: [("content-type", "application/json")], body: body) }
            }
            var out: [H2Response] = []
            for try await r in group { out.append(r) }
            return out
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 20, "every call answered promptly")
        let refused = responses.filter { $0.status == 503 }
        XCTAssertEqual(refused.count + responses.filter { $0.status == 200 }.count, responses.count,
                       "only 200 or 503: \(responses.map(\.status))")
        XCTAssertGreaterThan(refused.count, 0, "the burst overloaded both replicas")
        for r in refused {
            XCTAssertNotNil(r.headers.first { $0.0 == "retry-after" }, "503 without Retry-After: \(r.headers)")
            let error = try JSONValue.parse(r.body)["error"]
            XCTAssertEqual(error?["code"]?.intValue, -32000, String(decoding: r.body, as: UTF8.self))
        }

        // No replica at all: HAProxy's own answer has the same shape.
        for r in cluster.replicas { kill(r.process.processIdentifier, SIGKILL) }
        try cluster.lb.waitUntilUp([])
        let none = try await client.post(path: "/rpc", headers: [("content-type", "application/json")], body: body)
        XCTAssertEqual(none.status, 503)
        XCTAssertEqual(none.headers.first { $0.0 == "retry-after" }?.1, "1")
        XCTAssertEqual(try JSONValue.parse(none.body)["error"]?["data"]?["reason"]?.stringValue, "no_replica")
    }
}
