@testable import GlimpseImage
@testable import GlimpseRPC
@testable import GlimpseServing
import XCTest

/// The `classify` fast path (`ClassifyCall`, `GlimpseMethods.write`) against the general path it
/// stands in for: the same parameters, the same reply bytes, the same outcome.
final class ClassifyCallTests: XCTestCase {
    let limits = ServingConfiguration()
    /// A 1×1 PNG, base64.
    static let image = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg=="

    func fast(_ body: String) -> ClassifyCall? {
        Array(body.utf8).withUnsafeBufferPointer { ClassifyCall.parse($0, limits: limits) }
    }

    /// What the general path makes of the same body: its id and params, or nil when it refuses.
    func general(_ body: String) -> (id: JSONValue, params: ClassifyParams)? {
        guard case .object(let o)? = try? JSONValue.parse(Array(body.utf8)), o["jsonrpc"] == "2.0",
              o["method"] == "classify", let id = o["id"],
              let params = try? ClassifyParams(o["params"], limits: limits) else { return nil }
        return (id, params)
    }

    func assertSame(_ body: String, file: StaticString = #filePath, line: UInt = #line) {
        guard let f = fast(body) else { return XCTFail("the fast path refused \(body.prefix(120))", file: file, line: line) }
        guard let g = general(body) else { return XCTFail("the general path refused \(body.prefix(120))", file: file, line: line) }
        XCTAssertEqual(f.id, g.id, file: file, line: line)
        let a = f.params.request, b = g.params.request
        XCTAssertEqual(a.images, b.images, file: file, line: line)
        XCTAssertEqual(a.model, b.model, file: file, line: line)
        XCTAssertEqual(a.topK, b.topK, file: file, line: line)
        XCTAssertEqual(a.crop, b.crop, file: file, line: line)
        XCTAssertEqual(a.deadlineMs, b.deadlineMs, file: file, line: line)
        XCTAssertEqual(a.minAccuracy, b.minAccuracy, file: file, line: line)
        XCTAssertEqual(a.clientID, b.clientID, file: file, line: line)
        XCTAssertTrue(f.params.single && g.params.single, file: file, line: line)
    }

    func testTheUsualCallsAreReadAsTheGeneralPathReadsThem() {
        let i = Self.image
        assertSame(#"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)","model":"mnist-8","top_k":5,"crop":"center"}}"#)
        assertSame(#"{"jsonrpc":"2.0","id":7,"method":"classify","params":{"image":"\#(i)"}}"#)
        assertSame(" \n{ \"params\" : { \"top_k\" : 1 , \"image\" : \"data:image/png;base64,\(i)\" } , \"method\" : \"classify\" ,\t\"id\" : \"a\\\"b\" , \"jsonrpc\" : \"2.0\" } \r\n")
        assertSame(#"{"jsonrpc":"2.0","id":null,"method":"classify","params":{"image":"\#(i)","model":null,"top_k":null,"crop":null,"deadline_ms":null,"min_accuracy":null,"client_id":null}}"#)
        assertSame(#"{"jsonrpc":"2.0","id":-12,"method":"classify","params":{"image":"\#(i)","deadline_ms":2.5e2,"min_accuracy":0.75,"client_id":"caf\u00e9","crop":"fill","model":"\u0061uto"}}"#)
        assertSame(#"{"jsonrpc":"2.0","id":0,"method":"classify","params":{"image":"\#(i)","deadline_ms":3600000,"min_accuracy":1,"top_k":\#(limits.maxTopK)}}"#)
    }

    func testAnythingElseGoesToTheGeneralPath() {
        let i = Self.image
        let refused = [
            #"[{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)"}}]"#,    // a batch
            #"{"jsonrpc":"2.0","method":"classify","params":{"image":"\#(i)"}}"#,             // a notification
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"images":["\#(i)"]}}"#,   // images
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)","images":["\#(i)"]}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\/\#(i)"}}"#,    // an escape in the image
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)","image":"\#(i)"}}"#,   // repeated
            #"{"jsonrpc":"2.0","id":1,"id":2,"method":"classify","params":{"image":"\#(i)"}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)","colour":1}}"#,       // unknown
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)"},"extra":1}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)","top_k":3.0}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)","top_k":0}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)","top_k":"5"}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)","crop":"middle"}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)","deadline_ms":0}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)","min_accuracy":1.5}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)","client_id":"\#(String(repeating: "x", count: 257))"}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"!!!!"}}"#,       // bad base64
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":""}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":null}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":["\#(i)"]}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify"}"#,
            #"{"jsonrpc":"2.1","id":1,"method":"classify","params":{"image":"\#(i)"}}"#,
            #"{"id":1,"method":"classify","params":{"image":"\#(i)"}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"models.list","params":{"image":"\#(i)"}}"#,
            #"{"jsonrpc":"2.0","id":1.5,"method":"classify","params":{"image":"\#(i)"}}"#,
            #"{"jsonrpc":"2.0","id":99999999999999999999,"method":"classify","params":{"image":"\#(i)"}}"#,
            #"{"jsonrpc":"2.0","id":[1],"method":"classify","params":{"image":"\#(i)"}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)"}} x"#,    // trailing bytes
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)"},}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)"}"#,       // cut short
            #"{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"\#(i)"#,
            #"{"jsonrp\u0063":"2.0","id":1,"method":"classify","params":{"image":"\#(i)"}}"#, // an escape in a key
            "",
        ]
        for body in refused {
            XCTAssertNil(fast(body), "the fast path read \(body.prefix(160))")
        }
    }

    /// Every prefix of a usual call: each is refused or read as the general path reads it.
    func testNoPrefixIsMisread() {
        let body = #"{"jsonrpc":"2.0","id":12,"method":"classify","params":{"image":"\#(Self.image)","top_k":3}}"#
        for n in 0..<body.utf8.count {
            let cut = String(decoding: body.utf8.prefix(n), as: UTF8.self)
            if fast(cut) != nil { assertSame(cut) }
        }
    }

    func result(_ scores: [Float], label: String = "tabby, tabby cat", energy: Double = 1.23456) -> ClassifyResult {
        ClassifyResult(model: "squeezenet1.1", variant: "squeezenet1.1-int8", version: "3", reason: "overflow",
                       predictions: scores.enumerated().map { Prediction(label: "\(label) \($0.offset)", index: 281 + $0.offset, score: $0.element) },
                       timing: StageTiming(queue: 0.1234, decode: 1.0005, inference: 12, total: 13.124999),
                       batchSize: 8, image: ImageInfo(format: "jpeg", width: 224, height: 168, orientation: 1),
                       energyMillijoules: energy, scores: scores)
    }

    func written(_ r: ClassifyResult) -> String {
        var out: [UInt8] = []
        GlimpseMethods.write(r, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func serialized(_ r: ClassifyResult) -> String { GlimpseMethods.encode(r).jsonString }

    func testTheResultIsWrittenAsTheJSONValueIsSerialized() {
        var g = SystemRandomNumberGenerator()
        var scores: [Float] = [0, 1, -1, 0.5, 0.125, 0.001, 0.1, 1e-4, 1e-5, 3.5e-8, .leastNonzeroMagnitude, .leastNormalMagnitude,
                               .ulpOfOne, 1 - .ulpOfOne, 0.99999994, 123456.5, 999_999.94, 1e6 + 0.5, 16_777_216, 1e20, -0.0,
                               .nan, .infinity, -.infinity, .greatestFiniteMagnitude]
        for _ in 0..<20_000 { scores.append(Float.random(in: 0...1, using: &g)) }
        for _ in 0..<2_000 { scores.append(Float(bitPattern: UInt32.random(in: 0...UInt32.max, using: &g))) }
        for _ in 0..<2_000 { scores.append(Float.random(in: 1e-9...1e-3, using: &g)) }
        for chunk in stride(from: 0, to: scores.count, by: 5) {
            let r = result(Array(scores[chunk..<min(chunk + 5, scores.count)]), energy: Double(chunk) * 0.0137)
            XCTAssertEqual(written(r), serialized(r), "scores \(r.predictions.map(\.score))")
        }
        for label in ["a \"quoted\" \\ label", "tab\there", "caf\u{e9} \u{1F431}", "\u{1}\u{1f}"] {
            let r = result([0.25], label: label, energy: .infinity)
            XCTAssertEqual(written(r), serialized(r))
        }
        XCTAssertEqual(written(result([])), serialized(result([])))
    }

    struct Boom: Error {}

    /// The dispatcher with and without the fast path: the same reply bytes, status and outcome.
    func testTheDispatcherAnswersAsTheClassifyMethodDoes() async {
        let i = Self.image
        let run: @Sendable (ClassifyRequest) async throws -> [ClassifyResult] = { request in
            switch request.model {
            case "busy": throw ServingError.overloaded(reason: "queue_full", retryAfterMs: 1500)
            case "boom": throw Boom()
            case "none": throw RPCError.invalidParams("no loaded model named \"none\"", reason: "unknown_model")
            default:
                var r = self.result([0.75, 0.125, 0.0625, 0.03125, 0.015625].prefix(request.topK).map { $0 })
                r.model = request.model
                return [r]
            }
        }
        let limits = self.limits
        let methods: [String: RPCDispatcher.Handler] = ["classify": { params, _ in
            let p = try ClassifyParams(params, limits: limits)
            let results = try await run(p.request)
            return p.single ? GlimpseMethods.encode(results[0]) : .array(results.map(GlimpseMethods.encode))
        }]
        let outcomes = OutcomeLog()
        let fastPath = RPCDispatcher(methods: methods, classify: ClassifyFastPath(limits: limits, run: run)) { outcomes.add("fast", $0) }
        let general = RPCDispatcher(methods: methods) { outcomes.add("general", $0) }
        for (id, model) in [("1", "mnist-8"), (#""x""#, "busy"), ("null", "boom"), ("3", "none"), ("4", "auto")] {
            let body = Array(#"{"jsonrpc":"2.0","id":\#(id),"method":"classify","params":{"image":"\#(i)","model":"\#(model)","top_k":3}}"#.utf8)
            XCTAssertNotNil(body.withUnsafeBufferPointer { ClassifyCall.parse($0, limits: limits) })
            let a = await fastPath.handle(body: body), b = await general.handle(body: body)
            XCTAssertEqual(String(decoding: a.body, as: UTF8.self), String(decoding: b.body, as: UTF8.self))
            XCTAssertEqual(a.status, b.status)
            XCTAssertEqual(a.retryAfterSeconds, b.retryAfterSeconds)
            let (f, g) = (outcomes.last("fast"), outcomes.last("general"))
            XCTAssertEqual(f?.method, g?.method)
            XCTAssertEqual(f?.error?.code, g?.error?.code)
            XCTAssertEqual(f?.served?.model ?? f?.params?["model"]?.stringValue, g?.result?["model"]?.stringValue ?? g?.params?["model"]?.stringValue)
            XCTAssertEqual(f?.served?.variant, g?.result?["variant"]?.stringValue)
        }
    }

    final class OutcomeLog: @unchecked Sendable {
        private let lock = NSLock()
        private var outcomes: [String: RPCCallOutcome] = [:]
        func add(_ path: String, _ o: RPCCallOutcome) { lock.withLock { outcomes[path] = o } }
        func last(_ path: String) -> RPCCallOutcome? { lock.withLock { outcomes[path] } }
    }
}
