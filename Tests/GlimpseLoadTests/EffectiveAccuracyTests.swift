import Foundation
import GlimpseLoad
import GlimpseTestSupport
import XCTest

/// `--labels`: labelled images, the expected label of each answer, and effective accuracy (correct
/// top-1 answers within the SLO against every offered image).
final class EffectiveAccuracyTests: XCTestCase {
    var root: URL!

    override func setUpWithError() throws {
        root = try temporaryFolder("labels").url
        for (label, names) in [("cat", ["b.jpg", "a.jpg", "notes.txt"]), ("dog", ["c.png"])] {
            let dir = root.appendingPathComponent("classes/\(label)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for name in names { try Data(label.uppercased().utf8).write(to: dir.appendingPathComponent(name)) }
        }
    }

    func testAFolderOfClassSubfolders() throws {
        let l = try LabelledImages.load(labels: root.appendingPathComponent("classes").path, imagesFolder: nil)
        XCTAssertEqual(l.items.map { ($0.path as NSString).lastPathComponent }, ["a.jpg", "b.jpg", "c.png"], "images only, sorted")
        XCTAssertEqual(l.items.map(\.label), ["cat", "cat", "dog"])
        let shuffled = l.shuffled(seed: 3)
        XCTAssertEqual(shuffled.items.map(\.path).sorted(), l.items.map(\.path))
        XCTAssertEqual(shuffled, l.shuffled(seed: 3), "the same seed, the same order")
    }

    func testAMappingFile() throws {
        let images = root.appendingPathComponent("classes/cat").path
        let l = try LabelledImages.mapping("# image label\nb.jpg\ttabby cat\na.jpg, cat\n\n", imagesFolder: images)
        XCTAssertEqual(l.items.map(\.label), ["cat", "tabby cat"])
        XCTAssertThrowsError(try LabelledImages.mapping("a.jpg\n", imagesFolder: images), "no label")
        XCTAssertThrowsError(try LabelledImages.mapping("zzz.jpg cat\n", imagesFolder: images), "no such image")
        XCTAssertThrowsError(try LabelledImages.mapping("a.jpg cat\na.jpg dog\n", imagesFolder: images), "labelled twice")
        let file = root.appendingPathComponent("labels.txt")
        try Data("a.jpg cat\n".utf8).write(to: file)
        XCTAssertThrowsError(try LabelledImages.load(labels: file.path, imagesFolder: nil), "a file needs --images")
        XCTAssertEqual(try LabelledImages.load(labels: file.path, imagesFolder: images).items.count, 1)
    }

    func testTheCorpusKeepsTheLabelsOfEachBody() throws {
        let l = LabelledImages(items: [.init(path: "", label: "a"), .init(path: "", label: "b"), .init(path: "", label: "c")])
        let corpus = RequestCorpus.classify(base64Images: ["QQ==", "Qg==", "Qw=="], labels: l.items.map(\.label),
                                            options: ClassifyOptions(model: "m", imagesPerCall: 2), maxBodies: 10)
        XCTAssertEqual(corpus.bodies.count, 2)
        XCTAssertEqual(corpus.expectedLabels, [["a", "b"], ["c", "a"]])
        XCTAssertEqual(RequestCorpus.classify(base64Images: ["QQ=="], options: ClassifyOptions()).expectedLabels, [])
    }

    func testTheInspectorReadsTheTopLabelAsFoundationDoes() {
        let body = Array(#"{"jsonrpc":"2.0","id":1,"result":{"model":"m","variant":"v","predictions":[{"label":"cat","index":3,"score":0.9},{"label":"dog","index":5,"score":0.1}],"timing_ms":{"queue":1,"inference":2},"batch_size":1}}"#.utf8)
        let fast = ResponseInspector.inspect(status: 200, body: body)
        XCTAssertEqual(fast.results.first?.label, "cat")
        XCTAssertEqual(fast.results.first?.variant, "v")
        let spaced = Array(#"{ "jsonrpc": "2.0", "id": 1, "result": [ { "predictions": [ { "score": 0.5, "label": "ship" } ] }, { "predictions": [] } ] }"#.utf8)
        XCTAssertEqual(ResponseInspector.inspect(status: 200, body: spaced).results.map(\.label), ["ship", nil])
        // An escape sends the body to JSONSerialization, which reads the same label.
        let escaped = Array(#"{"jsonrpc":"2.0","id":1,"result":{"predictions":[{"label":"a\"b"}]}}"#.utf8)
        XCTAssertEqual(ResponseInspector.inspect(status: 200, body: escaped).results.first?.label, "a\"b")
    }

    func testTheRecorderCountsCorrectAnswersWithinTheSLOAgainstEveryOfferedImage() {
        var a = LoadRecorder(), b = LoadRecorder()
        for r in [0, 1] {
            var rec = r == 0 ? a : b
            rec.sloMicros = 25_000
            rec.expectedLabels = [["cat"], ["dog"]]
            if r == 0 { a = rec } else { b = rec }
        }
        func answer(_ variant: String, _ label: String) -> H2Response {
            H2Response(status: 200, headers: [], body: Array(#"{"jsonrpc":"2.0","id":1,"result":{"variant":"\#(variant)","predictions":[{"label":"\#(label)","index":0,"score":1}],"timing_ms":{"queue":1,"inference":2},"batch_size":1}}"#.utf8))
        }
        let shed = H2Response(status: 503, headers: [], body: Array(#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"overloaded","data":{"reason":"deadline_unmeetable"}}}"#.utf8))
        func at(_ second: Double, latencyMs: Double) -> (UInt64, H2Timing) {
            let intended = UInt64(second * 1e9)
            return (intended, H2Timing(submitted: intended, headersSent: 0, completed: intended + UInt64(latencyMs * 1e6)))
        }
        // Second 0: right and in time (large), right but late (large), wrong (small), refused.
        // Second 1: right (small), right (large), and a drop.
        let plan: [(Int, H2Response, Int, Double, Double)] = [
            (0, answer("large", "cat"), 0, 0.1, 5), (0, answer("large", "dog"), 1, 0.2, 40), (1, answer("small", "cat"), 1, 0.3, 3),
            (1, shed, 0, 0.4, 1), (0, answer("small", "dog"), 1, 1.1, 4), (1, answer("large", "cat"), 0, 1.2, 4),
        ]
        for (recorder, response, body, second, ms) in plan {
            let (intended, timing) = at(second, latencyMs: ms)
            if recorder == 0 {
                a.record(.success(response), intendedNs: intended, timing: timing, measureStartNs: 0, bodyIndex: body)
            } else {
                b.record(.success(response), intendedNs: intended, timing: timing, measureStartNs: 0, bodyIndex: body)
            }
        }
        b.recordDropped(reason: "client_backlog", intendedNs: 1_500_000_000, measureStartNs: 0)
        a.started = 3
        b.started = 3
        a.merge(b)
        XCTAssertEqual(a.correct, 4)
        XCTAssertEqual(a.correctWithinSLO, 3)
        let r = RunResult(mode: .constantRate(10), connections: 2, recorder: a, measureStartNs: 0, measureEndNs: 2_000_000_000)
        XCTAssertEqual(r.labelledOffered, 7)
        XCTAssertEqual(r.labelledAnswers, 5)
        XCTAssertEqual(r.correctWithinSLO, 3)
        XCTAssertEqual(r.effectiveAccuracy ?? 0, 3.0 / 7, accuracy: 1e-12)
        XCTAssertEqual(r.answeredAccuracy ?? 0, 4.0 / 5, accuracy: 1e-12)
        XCTAssertEqual(r.variantAccuracy?["large"] ?? 0, 1, accuracy: 1e-12)
        XCTAssertEqual(r.variantAccuracy?["small"] ?? 0, 0.5, accuracy: 1e-12)
        XCTAssertEqual(r.sloAttainment ?? 0, 4.0 / 7, accuracy: 1e-12)
        // Per second of intended send time.
        XCTAssertEqual(r.timeline.map(\.offered), [4, 3])
        XCTAssertEqual(r.timeline.map(\.withinSLO), [2, 2])
        XCTAssertEqual(r.timeline.map(\.correctWithinSLO), [1, 2])
        XCTAssertEqual(r.timeline[0].effectiveAccuracy ?? 0, 0.25, accuracy: 1e-12)
        XCTAssertEqual(r.timeline[1].effectiveAccuracy ?? 0, 2.0 / 3, accuracy: 1e-12)
        let text = SummaryTable.render([r])
        XCTAssertTrue(text.contains("effective accuracy (correct top-1 within 25 ms, of all offered images): 3 of 7 (42.86%); accuracy of the answers: 80.00%"), text)
        XCTAssertTrue(text.contains("large=3 (60.0%, 100.00% correct)"), text)
        // Without labels none of it appears.
        let plain = RunResult(mode: .constantRate(10), connections: 1, recorder: LoadRecorder(), measureStartNs: 0, measureEndNs: 1)
        XCTAssertNil(plain.effectiveAccuracy)
        XCTAssertFalse(SummaryTable.render([plain]).contains("effective accuracy"))
    }

    /// End to end: a tiny server that always answers "cat"; half the offered images are dogs.
    func testEffectiveAccuracyAgainstATinyServer() throws {
        let server = try TinyH2Server { _, _, _ in
            let one = #"{"jsonrpc":"2.0","id":1,"result":{"variant":"v","predictions":[{"label":"cat","index":0,"score":1}],"timing_ms":{"queue":0,"inference":1},"batch_size":1}}"#
            return (200, [("content-type", "application/json")], Array(one.utf8))
        }
        defer { server.stop() }
        let labels = root.appendingPathComponent("pairs")
        for label in ["cat", "dog"] {
            let dir = labels.appendingPathComponent(label)
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            try Data(label.utf8).write(to: dir.appendingPathComponent("1.jpg"))
        }
        var config = LoadConfiguration(port: server.port, connections: 1, mode: .constantRate(200), duration: 0.5, warmup: 0.1)
        config.sloMs = 1_000
        let plan = try LoadPlan.make(base: config, concurrency: [], rates: [200], poisson: false,
                                     source: .labelled(labels: labels.path, images: nil, ClassifyOptions(model: "m"), seed: 1), path: "/rpc")
        XCTAssertEqual(plan.corpus.expectedLabels.count, 2)
        let r = try LoadRunner.run(plan.configuration, corpus: plan.corpus)
        XCTAssertEqual(r.succeeded, r.offered)
        XCTAssertEqual(r.labelledOffered, r.offered)
        XCTAssertEqual(r.effectiveAccuracy ?? 0, 0.5, accuracy: 0.02)
        XCTAssertEqual(r.variantAccuracy?["v"] ?? 0, 0.5, accuracy: 0.02)
        XCTAssertEqual(r.timeline.compactMap(\.offered).reduce(0, +), r.offered)
        let data = try FileReports.json([r])
        XCTAssertEqual(try JSONDecoder().decode([String: [RunResult]].self, from: data)["runs"], [r])
    }
}
