import Foundation
import GlimpseLoad
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// The status page at `GET /` of the real executable, rendered by headless Chromium while requests flow.
final class StatusPageTests: XCTestCase {
    static let chromium = "/usr/bin/chromium"

    func testStatusPageIsServedAsSelfContainedHTML() throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder()])
        defer { server.stop() }
        for http2 in [false, true] {
            let reply = try ExternalClient.curl(server.base + "/", http2: http2)
            XCTAssertEqual(reply.status, 200)
            let headers = reply.headers.lowercased()
            XCTAssertTrue(headers.contains("content-type: text/html; charset=utf-8"), headers)
            XCTAssertTrue(headers.contains("cache-control: no-store"), headers)
            let html = String(decoding: reply.body, as: UTF8.self)
            for id in ["throughput", "images-per-second", "p50", "p90", "p99", "batch-size", "queue-depth", "inflight",
                       "variant-mix", "energy-per-image", "power", "energy-source", "rss", "cpu"] {
                XCTAssertTrue(html.contains(#"id="\#(id)""#), "no element with id \(id)")
            }
            // Nothing is fetched from elsewhere: no CDN, no external scripts, styles, fonts or images.
            for external in ["http://", "https://", "<script src", "<link", "@import", "url("] {
                XCTAssertFalse(html.contains(external), "the page must be self-contained, found \(external)")
            }
        }
    }

    func testFiguresShowDashUntilTheSecondPoll() throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder()])
        defer { server.stop() }
        try classify(server, count: 2)
        // The page polls at once and then every second: 300 ms of virtual time see only the first poll.
        let dom = try dumpDOM(server.base + "/", virtualTimeMs: 300)
        XCTAssertTrue(dom.contains(#"id="throughput""#), "not the status page: \(dom.prefix(500))")
        XCTAssertFalse(isReady(dom), "data-ready must wait for the second poll")
        for id in ["throughput", "p50", "energy-per-image"] {
            XCTAssertEqual(Self.text(of: id, in: dom), "—", "\(id) before the second poll")
        }
    }

    func testChromiumRendersLiveFigures() throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder()])
        defer { server.stop() }
        try classify(server, count: 3)

        // Rates come from the difference between polls, so requests keep arriving while Chromium runs.
        // Under a virtual time budget the page's timers run ahead of the wall clock, so the polls of one
        // run are close together in real time; a run that saw no request between them is tried again.
        let client = try H2Client(host: "127.0.0.1", port: server.port, requestTimeout: 30)
        defer { client.close() }
        let body = [UInt8](RPC.classifyBody(image: try SharedData.data("images/digits/torchserve_4.png"), model: "mnist-8"))
        let load = BackgroundLoad()
        let finished = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            while load.running {
                if let reply = try? client.postBlocking(path: "/rpc", headers: [("content-type", "application/json")], body: body),
                   reply.status == 200 {
                    load.succeeded()
                }
                Thread.sleep(forTimeInterval: 0.002)
            }
            finished.signal()
        }
        defer {
            load.stop()
            _ = finished.wait(timeout: .now() + 35)
        }

        var dom = ""
        for _ in 0..<3 {
            dom = try dumpDOM(server.base + "/", virtualTimeMs: 8000)
            if isReady(dom), let rate = Self.number(of: "throughput", in: dom), rate > 0 { break }
        }
        load.stop()
        XCTAssertGreaterThan(load.count, 0, "the background requests failed")
        XCTAssertTrue(isReady(dom), "body never got data-ready=\"1\"; status line: \(Self.text(of: "status", in: dom) ?? "none")")

        let figure = { (id: String) -> Double in
            guard let v = Self.number(of: id, in: dom) else {
                XCTFail("#\(id) shows \(Self.text(of: id, in: dom) ?? "nothing"), not a number")
                return .nan
            }
            return v
        }
        XCTAssertGreaterThan(figure("throughput"), 0)
        XCTAssertGreaterThan(figure("images-per-second"), 0)
        let p50 = figure("p50"), p90 = figure("p90"), p99 = figure("p99")
        XCTAssertGreaterThan(p50, 0)
        XCTAssertLessThan(p50, 10_000, "p50 in ms")
        XCTAssertLessThanOrEqual(p50, p90)
        XCTAssertLessThanOrEqual(p90, p99)
        XCTAssertGreaterThan(figure("energy-per-image"), 0)
        XCTAssertGreaterThanOrEqual(figure("power"), 0)
        XCTAssertGreaterThanOrEqual(figure("batch-size"), 1)
        XCTAssertGreaterThanOrEqual(figure("queue-depth"), 0)
        XCTAssertGreaterThanOrEqual(figure("inflight"), 0)
        XCTAssertGreaterThan(figure("rss"), 1, "resident memory in MiB")
        XCTAssertEqual(figure("models"), 4, "the test server's four models")
        XCTAssertTrue(["estimate", "rapl"].contains(Self.text(of: "energy-source", in: dom) ?? ""), "energy source label")
        XCTAssertTrue(dom.contains("mnist-8"), "variant mix lists mnist-8")
    }

    // MARK: - Helpers

    func classify(_ server: GlimpseProcess, count: Int) throws {
        let image = try SharedData.data("images/digits/torchserve_4.png")
        for _ in 0..<count {
            let reply = try ExternalClient.curl(server.base + "/rpc", body: RPC.classifyBody(image: image, model: "mnist-8"))
            XCTAssertEqual(reply.status, 200)
        }
    }

    /// Runs headless Chromium on `url` and returns the DOM after `virtualTimeMs` of virtual time. Killed after 60 s.
    func dumpDOM(_ url: String, virtualTimeMs: Int) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: Self.chromium) else {
            throw TestServerError(description: "\(Self.chromium) is not installed (scripts/setup.sh --test installs Debian's chromium package)")
        }
        let dir = try temporaryFolder("chromium").url
        let domFile = dir.appendingPathComponent("dom.html")
        _ = FileManager.default.createFile(atPath: domFile.path, contents: nil)
        let output = try FileHandle(forWritingTo: domFile)
        defer { try? output.close() }

        let chromium = Process()
        chromium.executableURL = URL(fileURLWithPath: Self.chromium)
        chromium.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                              "--user-data-dir=\(dir.appendingPathComponent("profile").path)",
                              "--virtual-time-budget=\(virtualTimeMs)", "--dump-dom", url]
        chromium.standardOutput = output
        chromium.standardError = FileHandle.nullDevice
        try chromium.run()
        let deadline = Date().addingTimeInterval(60)
        while chromium.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        if chromium.isRunning {
            chromium.terminate()
            let grace = Date().addingTimeInterval(5)
            while chromium.isRunning && Date() < grace { Thread.sleep(forTimeInterval: 0.1) }
            if chromium.isRunning { kill(chromium.processIdentifier, SIGKILL) }
            chromium.waitUntilExit()
            throw TestServerError(description: "chromium did not finish within 60 s")
        }
        guard chromium.terminationStatus == 0 else {
            throw TestServerError(description: "chromium exited with status \(chromium.terminationStatus)")
        }
        return (try? String(contentsOf: domFile, encoding: .utf8)) ?? ""
    }

    func isReady(_ dom: String) -> Bool {
        dom.range(of: #"<body[^>]*\sdata-ready="1""#, options: .regularExpression) != nil
    }

    /// The text of the element with `id` (up to its first child tag).
    static func text(of id: String, in dom: String) -> String? {
        guard let regex = try? NSRegularExpression(pattern: #"id="\#(id)"[^>]*>([^<]*)<"#),
              let match = regex.firstMatch(in: dom, range: NSRange(dom.startIndex..., in: dom)),
              let range = Range(match.range(at: 1), in: dom) else { return nil }
        return dom[range].trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func number(of id: String, in dom: String) -> Double? {
        text(of: id, in: dom).flatMap(Double.init)
    }
}

/// A stop flag and a success count shared with the background request loop.
private final class BackgroundLoad: @unchecked Sendable {
    private let lock = NSLock()
    private var stopped = false
    private var successes = 0

    var running: Bool {
        lock.lock()
        defer { lock.unlock() }
        return !stopped
    }

    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return successes
    }

    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
    }

    func succeeded() {
        lock.lock()
        successes += 1
        lock.unlock()
    }
}
