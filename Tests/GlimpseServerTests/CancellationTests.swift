import Foundation
import GlimpseLoad
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// Clients that go away before their answer: the request is an outcome of its own (`cancelled`) in the
/// metrics, logged below error level; one still waiting in the queue leaves it without running.
final class CancellationTests: XCTestCase {
    func folder() throws -> URL {
        let dir = try temporaryFolder("cancellation").url
        try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("squeezenet1.1.onnx").path,
                                                   withDestinationPath: try SharedData.path("models/squeezenet1.1.onnx"))
        try #"{"preprocessing": "imagenet"}"#.write(to: dir.appendingPathComponent("squeezenet1.1.json"), atomically: true, encoding: .utf8)
        return dir
    }

    static func metrics(_ server: GlimpseProcess) throws -> String {
        String(decoding: try ExternalClient.curl(server.base + "/metrics", http2: false).body, as: UTF8.self)
    }

    /// The sum of the samples of `metric` whose line contains `label`.
    static func sum(_ text: String, _ metric: String, containing label: String) -> Double {
        text.split(separator: "\n").filter { $0.hasPrefix(metric) && $0.contains(label) }
            .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
    }

    func testClientsThatLeaveAreCancelledNotErrorsAndQueuedWorkDoesNotRun() async throws {
        // One engine thread, batches of one: the 16 images of a call run one after another (5-25 ms each
        // on the machines seen), so every client below leaves long before its call could end.
        let server = try GlimpseProcess(arguments: ["--models", try folder().path, "--threads", "1", "--max-batch", "1"])
        defer { server.stop() }
        let image = try SharedData.data("images/imagenet/kitten_small.jpg").base64EncodedString()
        let call: JSONValue = ["jsonrpc": "2.0", "id": 1, "method": "classify",
                               "params": ["model": "squeezenet1.1", "images": .array(Array(repeating: .string(image), count: 16))]]
        let body = call.serialized()
        let calls = 8
        // h2c clients that close their connection while their call's images wait in the queue or run.
        for _ in 0..<calls / 2 {
            let client = try H2Client(host: "127.0.0.1", port: server.port, requestTimeout: 30)
            let request = Task { _ = try? await client.post(path: "/rpc", headers: [("content-type", "application/json")], body: body) }
            try await Task.sleep(nanoseconds: 30_000_000)
            client.close()
            _ = await request.result
        }
        // HTTP/1.1 clients that reset their connection (SO_LINGER 0: RST, not the half-close after which
        // an HTTP/1.1 client may still read its answer).
        let head = Array("POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
        for _ in 0..<calls / 2 {
            let fd = try connectLoopbackSocket(port: server.port)
            let bytes = head + body
            var sent = 0
            while sent < bytes.count {
                let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + sent, bytes.count - sent) }
                guard n > 0 else { break }
                sent += n
            }
            try await Task.sleep(nanoseconds: 30_000_000)
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            close(fd)
        }
        // Waits (bounded) for every call to be accounted for.
        let deadline = Date().addingTimeInterval(TestTime.seconds(30))
        var text = try Self.metrics(server)
        while Self.sum(text, "glimpse_requests_total", containing: #"method="classify""#) < Double(calls) && Date() < deadline {
            try await Task.sleep(nanoseconds: 100_000_000)
            text = try Self.metrics(server)
        }
        let errors = Self.sum(text, "glimpse_requests_total", containing: #"outcome="error""#)
        let cancelled = Self.sum(text, "glimpse_requests_total", containing: #"outcome="cancelled""#)
        let ok = Self.sum(text, "glimpse_requests_total", containing: #"outcome="ok""#)
        let ran = Self.sum(text, "glimpse_batch_size_sum", containing: "squeezenet1.1")
        let requests = text.split(separator: "\n").filter { $0.hasPrefix("glimpse_requests_total") }.joined(separator: "\n")
        print("\(calls) calls whose clients left: \(cancelled) cancelled, \(ok) ok, \(errors) errors; the engine ran \(ran) of \(calls * 16) images")
        XCTAssertEqual(cancelled + ok + errors, Double(calls), requests)
        XCTAssertEqual(errors, 0, requests)
        XCTAssertEqual(cancelled, Double(calls), "every call's client left before its 16 images ran: \(requests)")
        XCTAssertLessThan(ran, Double(calls * 16) / 2, "images of calls whose clients left while queued still ran")
        XCTAssertFalse(server.log.contains(" error glimpse"), String(server.log.suffix(3000)))
        XCTAssertFalse(server.log.contains("CancellationError"), String(server.log.suffix(3000)))
        // The server goes on serving.
        let reply = try ExternalClient.curl(server.base + "/rpc", body: Data(body), http2: true)
        XCTAssertEqual(reply.status, 200)
        XCTAssertNotNil(try JSONValue.parse([UInt8](reply.body))["result"]?[15]?["predictions"])
    }
}
