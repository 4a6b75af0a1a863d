import Foundation
import GlimpseLoad
import GlimpseRPC
import GlimpseTestSupport
import XCTest

/// SIGTERM under load: every request the server accepted is answered, then the process exits cleanly.
final class DrainTests: XCTestCase {
    func testSIGTERMUnderLoadAnswersEveryAcceptedRequest() async throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder(), "--max-batch", "4",
                                                   // Instrumented (sanitizer) engines run several times slower: a longer wait keeps every request admitted.
                                                   "--max-queue-wait-ms", String(Int(TestTime.seconds(2000)))])
        defer { server.stop() }
        let client = try H2Client(host: "127.0.0.1", port: server.port, requestTimeout: 60)
        defer { client.close() }
        // A small image keeps each body tiny, so all requests fit in the server's initial HTTP/2 flow-control
        // window and are fully sent at once; squeezenet keeps the queue busy well past the SIGTERM.
        let image = try SharedData.data("images/digits/torchserve_0.png")
        let body = [UInt8](RPC.classifyBody(image: image, model: "squeezenet1.1"))
        XCTAssertLessThan(body.count * 48, 60_000)
        // Warm up, so the engine plans exist and the queue's latency model is calibrated.
        let warm = try await client.post(path: "/rpc", headers: [("content-type", "application/json")], body: body)
        XCTAssertEqual(warm.status, 200)

        let count = 48
        let results = await withTaskGroup(of: Result<H2Response, any Error>.self) { group in
            for _ in 0..<count {
                group.addTask {
                    do { return .success(try await client.post(path: "/rpc", headers: [("content-type", "application/json")], body: body)) }
                    catch { return .failure(error) }
                }
            }
            // Let the requests reach the server's queue, then ask it to stop.
            try? await Task.sleep(nanoseconds: 300_000_000)
            kill(server.process.processIdentifier, SIGTERM)
            let signalled = Date()
            // A draining server takes no new work: a new connection is refused or told it is not ready.
            try? await Task.sleep(nanoseconds: 50_000_000)
            // Either outcome is named: a reply must be 503; a failure must be curl's "could not connect"
            // (exit 7, the listener is closed), not a timeout, a reset or a missing curl.
            do {
                let probe = try ExternalClient.curl(server.base + "/readyz", http2: false, extra: ["--max-time", "10"])
                XCTAssertEqual(probe.status, 503, "/readyz must answer 503 while draining")
            } catch let failure as ExternalClient.ClientError {
                XCTAssertEqual(failure.status, 7, "a probe that gets no answer must be refused the connection: \(failure)")
            } catch {
                XCTFail("the /readyz probe failed unexpectedly: \(error)")
            }
            var out: [Result<H2Response, any Error>] = []
            var afterSignal = 0
            for await r in group {
                out.append(r)
                if Date() > signalled { afterSignal += 1 }
            }
            // Otherwise the test proved nothing about draining.
            XCTAssertGreaterThan(afterSignal, 8, "requests must still be queued when SIGTERM arrives")
            return out
        }
        var answered = 0
        for r in results {
            switch r {
            case .success(let response):
                XCTAssertEqual(response.status, 200)
                let json = try JSONValue.parse(response.body)
                XCTAssertNotNil(json["result"], "accepted request must get its result: \(json.jsonString)")
                answered += 1
            case .failure(let error):
                XCTFail("a request sent before SIGTERM was not answered: \(error)")
            }
        }
        XCTAssertEqual(answered, count)
        client.close()
        let status = server.stop(timeout: 30)
        XCTAssertEqual(status, 0, "glimpse must exit cleanly after draining; log:\n\(server.log)")
        XCTAssertTrue(server.log.contains("stopped"))
    }
}
