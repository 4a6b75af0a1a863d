import Foundation
import GlimpseLoad
import XCTest

/// Rate steps (a step load), the latency objective (SLO) count and the per-second variant mix.
final class StepLoadAndSLOTests: XCTestCase {
    func testConstantScheduleChangesRateAtTheStepAndKeepsItsStagger() {
        // 1000/s with a quarter-period offset, then 250/s from 3.1 ms on.
        var s = ArrivalSchedule(kind: .constant, rate: 1000, offsetNs: 250_000, steps: [.init(atNs: 3_100_000, rate: 250)])
        let times = (0..<6).map { _ in s.next() }
        XCTAssertEqual(times, [250_000, 1_250_000, 2_250_000, 4_100_000, 8_100_000, 12_100_000])
        XCTAssertEqual(s.rate, 250)
    }

    func testPoissonScheduleFollowsEachStepsRate() {
        var s = ArrivalSchedule(kind: .poisson, rate: 2000, seed: 7, steps: [.init(atNs: 5e9, rate: 200), .init(atNs: 10e9, rate: 1000)])
        var counts = [0, 0, 0]
        while true {
            let t = s.next()
            if t >= 15_000_000_000 { break }
            counts[Int(t / 5_000_000_000)] += 1
        }
        XCTAssertEqual(Double(counts[0]), 10_000, accuracy: 400)
        XCTAssertEqual(Double(counts[1]), 1_000, accuracy: 130)
        XCTAssertEqual(Double(counts[2]), 5_000, accuracy: 300)
    }

    func testStepsParseAndValidate() throws {
        XCTAssertEqual(try RateStep.parseList("300@20, 900@40.5"), [RateStep(atSeconds: 20, rate: 300), RateStep(atSeconds: 40.5, rate: 900)])
        XCTAssertThrowsError(try RateStep.parseList("300"))
        XCTAssertThrowsError(try RateStep.parseList("fast@20"))
        var c = LoadConfiguration(mode: .constantRate(100), duration: 30)
        c.rateSteps = [RateStep(atSeconds: 10, rate: 50), RateStep(atSeconds: 20, rate: 10)]
        XCTAssertNoThrow(try c.validate())
        c.rateSteps = [RateStep(atSeconds: 20, rate: 50), RateStep(atSeconds: 10, rate: 10)]
        XCTAssertThrowsError(try c.validate(), "times must increase")
        c.rateSteps = [RateStep(atSeconds: 30, rate: 50)]
        XCTAssertThrowsError(try c.validate(), "a step at or after the end never happens")
        c.rateSteps = [RateStep(atSeconds: 10, rate: 50)]
        c.mode = .closed(concurrency: 4)
        XCTAssertThrowsError(try c.validate(), "steps need an open loop")
        c.rateSteps = []
        c.sloMs = 0
        XCTAssertThrowsError(try c.validate())
    }

    func testConnectionSchedulesSplitTheRateAndShiftStepsByTheWarmUp() {
        var c = LoadConfiguration(connections: 2, mode: .constantRate(1000), duration: 10, warmup: 1)
        c.rateSteps = [RateStep(atSeconds: 2, rate: 100)]
        XCTAssertNil(LoadConfiguration(mode: .closed(concurrency: 1)).arrivalSchedule(ofConnection: 0))
        guard var a = c.arrivalSchedule(ofConnection: 0), var b = c.arrivalSchedule(ofConnection: 1) else { return XCTFail("no schedule") }
        XCTAssertEqual(a.rate, 500)
        XCTAssertEqual([a.next(), b.next(), a.next(), b.next()], [0, 1_000_000, 2_000_000, 3_000_000])
        // The step is 2 s into the measured period, which starts after the 1 s warm-up.
        while a.next() < 3_000_000_000 {}
        XCTAssertEqual(a.rate, 50)
    }

    func testRecorderCountsAnswersWithinTheSLOAndTheVariantsOfEachSecond() {
        var a = LoadRecorder(), b = LoadRecorder()
        a.sloMicros = 25_000
        b.sloMicros = 25_000
        func body(_ variant: String) -> [UInt8] {
            Array(#"{"jsonrpc":"2.0","id":1,"result":{"variant":"\#(variant)","timing_ms":{"queue":1,"inference":2},"batch_size":1}}"#.utf8)
        }
        let shed = Array(#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"overloaded","data":{"reason":"deadline_unmeetable"}}}"#.utf8)
        func at(_ second: Double, latencyMs: Double) -> (UInt64, H2Timing) {
            let done = UInt64(second * 1e9)
            return (done - UInt64(latencyMs * 1e6), H2Timing(submitted: 0, headersSent: 0, completed: done))
        }
        for (recorder, variant, second, ms) in [(0, "large", 0.5, 10.0), (0, "large", 0.6, 30.0), (1, "small", 0.7, 5.0),
                                               (0, "small", 1.2, 24.0), (1, "large", 1.5, 3.0), (1, "large", 1.6, 3.0)] {
            let (intended, timing) = at(second, latencyMs: ms)
            if recorder == 0 {
                a.record(.success(H2Response(status: 200, headers: [], body: body(variant))), intendedNs: intended, timing: timing, measureStartNs: 0)
            } else {
                b.record(.success(H2Response(status: 200, headers: [], body: body(variant))), intendedNs: intended, timing: timing, measureStartNs: 0)
            }
        }
        let (intended, timing) = at(1.7, latencyMs: 1)
        b.record(.success(H2Response(status: 503, headers: [], body: shed)), intendedNs: intended, timing: timing, measureStartNs: 0)
        b.recordDropped(reason: "client_backlog")
        a.started = 4
        b.started = 4
        a.merge(b)
        XCTAssertEqual(a.withinSLO, 5, "the 30 ms answer is late; the refusal and the drop are not answers")
        XCTAssertEqual(a.dropped, 1)
        XCTAssertEqual(a.timelineVariants, [0: ["large": 2, "small": 1], 1: ["small": 1, "large": 2]])
        let r = RunResult(mode: .constantRate(10), connections: 2, recorder: a, measureStartNs: 0, measureEndNs: 2_000_000_000)
        XCTAssertEqual(r.offered, 9)
        XCTAssertEqual(r.withinSLO, 5)
        XCTAssertEqual(r.sloMs, 25)
        XCTAssertEqual(r.sloAttainment ?? 0, 5.0 / 9, accuracy: 1e-12)
        XCTAssertEqual(r.timeline.map(\.variants), [["large": 2, "small": 1], ["small": 1, "large": 2]])
        XCTAssertTrue(SummaryTable.render([r]).contains("within 25 ms (SLO): 5 of 9 offered (55.56%)"))
        let csv = FileReports.csv([r]).split(separator: "\n")
        XCTAssertTrue(csv[0].hasSuffix(",offered,slo_ms,within_slo,slo_attainment"))
        XCTAssertTrue(csv[1].hasSuffix(",9,25,5,0.5556"))
        // Without an SLO nothing is counted and the fields stay out.
        let plain = RunResult(mode: .constantRate(10), connections: 1, recorder: LoadRecorder(), measureStartNs: 0, measureEndNs: 1)
        XCTAssertNil(plain.sloAttainment)
        XCTAssertTrue(FileReports.csv([plain]).split(separator: "\n")[1].hasSuffix(",0,,,"))
    }

    /// End to end against the tiny server: a step from 400/s to 100/s, answers that take 20 ms, an SLO
    /// of 10 ms for the first variant's answers only (the other variant answers at once).
    func testStepLoadAgainstATinyServer() throws {
        let server = try TinyH2Server { _, _, _ in
            let one = #"{"jsonrpc":"2.0","id":1,"result":{"variant":"v","timing_ms":{"queue":0,"inference":1},"batch_size":1}}"#
            return (200, [("content-type", "application/json")], Array(one.utf8))
        }
        defer { server.stop() }
        var config = LoadConfiguration(port: server.port, connections: 1, mode: .constantRate(400), duration: 1, warmup: 0.1)
        config.rateSteps = [RateStep(atSeconds: 0.5, rate: 100)]
        config.sloMs = 1_000
        let r = try LoadRunner.run(config, corpus: .classify(base64Images: ["QUFB"], options: ClassifyOptions()))
        // 0.5 s at 400/s and 0.5 s at 100/s.
        XCTAssertEqual(Double(r.offered ?? 0), 250, accuracy: 3)
        XCTAssertEqual(r.succeeded, r.offered)
        XCTAssertEqual(r.withinSLO, r.succeeded)
        XCTAssertEqual(r.rateSteps, [RateStep(atSeconds: 0.5, rate: 100)])
        XCTAssertEqual(r.mode, "constant 400/s then 100/s@0.5s")
        XCTAssertEqual(r.timeline.compactMap { $0.variants?["v"] }.reduce(0, +), r.succeeded)
        let data = try FileReports.json([r])
        XCTAssertEqual(try JSONDecoder().decode([String: [RunResult]].self, from: data)["runs"], [r])
    }
}
