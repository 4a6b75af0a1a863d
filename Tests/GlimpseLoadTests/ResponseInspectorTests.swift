@testable import GlimpseLoad
import XCTest

/// The byte scanner of `ResponseInspector` must read every body exactly as `JSONSerialization` does.
final class ResponseInspectorTests: XCTestCase {
    static let samples: [String] = [
        #"{"id":1,"jsonrpc":"2.0","result":{"models":0,"status":"ok","uptime_s":12.098}}"#,
        #"{"jsonrpc":"2.0","id":1,"result":{"variant":"squeezenet1.1-fp32","timing_ms":{"queue":2.5,"inference":7,"total":11},"batch_size":4}}"#,
        #"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"overloaded","data":{"reason":"queue_full","retry_after_ms":50}}}"#,
        #"[{"jsonrpc":"2.0","id":1,"result":{"variant":"a"}},{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}}]"#,
        #"{"jsonrpc":"2.0","id":1,"result":[{"variant":"a","timing_ms":{"queue":1,"inference":2}},{"variant":"b"}]}"#,
        #"{"jsonrpc":"2.0","id":1,"result":{"results":[{"variant":"a","timing_ms":{"queue":0.125,"inference":3.75}},7,{"variant":"b","batch_size":2}]}}"#,
        #"{"result":{"results":{"variant":"x"}}}"#,
        #"{"result":null}"#, #"{"result":"text"}"#, #"{"result":[]}"#, #"{"result":[1,null,"x",[{}]]}"#,
        #"{"error":null,"result":{"variant":"v"}}"#, #"{"error":"bad","result":{"variant":"v"}}"#,
        #"{"error":{},"result":{}}"#, #"{"error":{"code":"x","data":{"reason":5}}}"#, #"{"error":{"code":12.75}}"#,
        #"{"error":{"code":true}}"#, #"{"error":{"code":-0,"data":{"reason":null}}}"#, #"{"error":{"code":1e3}}"#,
        #"{"error":{"code":12345678901234567890123}}"#, #"{"error":{"data":{"reason":"caf\u00e9 \"q\""}}}"#,
        #"{"error":{"data":{"reason":"café"}}}"#, #"{"result":{"variant":"a-very-long-variant-name-0123456789","timing_ms":{"queue":1.5}}}"#,
        #"{"result":{"variant":"abcdefg\"hijklmnop"}}"#, #"{"result":{"variant":"abcdefgh\u0041ijklmnop"}}"#,
        #"{"result":{"variant":"a","variant":"b"}}"#, #"{"result":{"variant":"a"},"result":{"variant":"b"}}"#,
        #"{"result":{"timing_ms":{"queue":"1","inference":false}}}"#, #"{"result":{"timing_ms":{"queue":1.0000000000000002}}}"#,
        #"{"result":{"timing_ms":{"queue":123456789.12345678}}}"#, #"{"result":{"timing_ms":{"queue":-0.0,"inference":1E2}}}"#,
        #"{"result":{"timing_ms":{"queue":0.1,"inference":0.30000000000000004}}}"#, #"{"result":{"batch_size":3.9}}"#,
        #"  [ ]  "#, "[]", "{}", "[1,2,3]", #"["a",{"result":{}}]"#, "{\"result\":{\"variant\":\"a\"}}\n", "\t{ \"result\" :\r\n{ } }",
        #"{"result":{"variant":"a"},"error":{"code":1,"data":{"reason":"late"}}}"#, #"{"result":{"variant":"x","results":[{"variant":"a","results":[{"variant":"n"}]},{"variant":"b"}]}}"#,
        #"{"result":{"results":5,"variant":"v","batch_size":-3}}"#, #"[{"result":[{"variant":"a"}]},{"error":{"code":2}},3,{"result":{}}]"#,
        #"{"result":{"timing_ms":{"queue":0.5,"inference":null,"other":[1,{"a":"b"}]},"batch_size":null}}"#,
        #"{"error":{"code":-32601,"message":"Method not found","data":{"reason":"unknown_method","detail":{"x":[true,false,null]}}}}"#,
        #"{"model_name":"squeezenet1.1","model_version":"1","outputs":[{"name":"out","datatype":"BYTES","shape":[1,2],"data":["0.7:207:golden retriever","0.1:257:Great Pyrenees"]}]}"#,
        #"{"model_name":"m","outputs":[{"data":["0.5:3"]},{"data":["0.1:1:x"]}]}"#, #"{"model_name":"m","outputs":[]}"#,
        #"{"model_name":"m","outputs":[{"data":[1.5,"0.1:1:x"]}]}"#, #"{"model_name":"m","outputs":[7,{"data":["0.1:1:x"]}]}"#,
        #"{"model_name":"m","outputs":[{"data":["0.1:1:a:b"],"data":["0.2:2:c"]}]}"#, #"{"model_name":5,"outputs":[{"data":["0.1:1:x"]}]}"#,
        #"{"error":"no model","model_name":"m"}"#, #"{"model_name":"m","result":{"variant":"v"}}"#, #"{"model_name":"café"}"#,
        #"[{"model_name":"a","outputs":[{"data":["0.9:0:zero"]}]},{"model_name":"b"}]"#, #"{"model_name":"m","model_name":"n"}"#,
        "OK", "", "   ", "{", "[", "{\"result\":}", "{\"result\":{}} x", "{\"result\":{},}", "[{\"result\":{}},]", "{\"a\" 1}",
        "{\"result\":01}", "{\"result\":1.}", "{\"result\":-}", "{\"result\":.5}", "{\"result\":tru}", "{\"result\":nul}",
        "{\"result\":\"a\u{01}b\"}", "{\"result\":{\"variant\":\"a\"}}\u{0}", "{'result':1}", "{\"result\":NaN}",
        String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
        "{\"result\":" + String(repeating: "[", count: 70) + String(repeating: "]", count: 70) + "}",
    ]

    private func reference(_ body: [UInt8], status: Int = 200) -> ResponseOutcome {
        var outcome = ResponseOutcome(status: status)
        ResponseInspector.inspectWithFoundation(body: body, into: &outcome)
        return outcome
    }

    func testScannerMatchesFoundationOnSamples() {
        for sample in Self.samples {
            let body = Array(sample.utf8)
            XCTAssertEqual(ResponseInspector.inspect(status: 200, body: body), reference(body), sample)
        }
    }

    func testScannerMatchesFoundationOnMutatedBodies() {
        var rng = SplitMix64(seed: 42)
        let alphabet = Array("{}[]\",:0123456789.-eE tfnrul\\ab\n".utf8) + [0x01, 0x1F, 0x7F, 0x80, 0xC3, 0xA9, 0xFF, 0x09]
        for n in 0..<30000 {
            var body = Array(Self.samples[n % Self.samples.count].utf8)
            for _ in 0..<(1 + Int(rng.next() % 3)) where !body.isEmpty {
                let at = Int(rng.next() % UInt64(body.count))
                switch rng.next() % 4 {
                case 0: body[at] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                case 1: body.remove(at: at)
                case 2: body.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: at)
                default: body = Array(body[..<at])
                }
            }
            XCTAssertEqual(ResponseInspector.inspect(status: 200, body: body), reference(body), String(decoding: body, as: UTF8.self))
        }
    }

    func testScannerReadsTheUsualBodiesItself() {
        for sample in Self.samples.prefix(15) {
            var outcome = ResponseOutcome(status: 200)
            let fast = Array(sample.utf8).withUnsafeBufferPointer { bytes in
                var scanner = FastJSONScanner(bytes)
                return scanner.scanDocument(into: &outcome)
            }
            XCTAssertTrue(fast, sample)
            XCTAssertEqual(outcome, reference(Array(sample.utf8)), sample)
        }
    }

    func testShapeMatchesOnlyBodiesWithTheSameOutcome() {
        let templates = [Self.samples[0], #"[{"id":1,"result":{"variant":"v1.2-x","n":[1,2.5,-3]}},{"id":22,"result":{"status":"ok"}}]"#,
                         #"{"id":7,"result":[{"variant":"a","score":0.75},{"variant":"b","score":1}]}"#, "OK 200", ""]
        let numbers = ["0", "7", "12.098", "-1", "-0.5", "123456789012", "01", "1.", "1e5", "--1", "1.2.3", "-", "9999999999999999999",
                       "3.14159", "00", "1-2", ".5", "5.", "12345678901234567", "123456789012345678"]
        var rng = SplitMix64(seed: 11)
        for template in templates {
            var shape = ResponseShape()
            var outcome = ResponseOutcome(status: 200)
            XCTAssertTrue(ResponseInspector.inspect(status: 200, body: Array(template.utf8), into: &outcome))
            shape.remember(Array(template.utf8), outcome: outcome)
            XCTAssertTrue(shape.matches(Array(template.utf8)), template)
            var hits = 0
            for _ in 0..<3000 {
                // Replace every number outside strings (and sometimes a string byte) with a random spelling.
                var body = ""
                var inString = false
                var inNumber = false
                for ch in template {
                    if ch == "\"" { inString.toggle() }
                    let numeric = !inString && (ch.isNumber || ch == "-" || ch == ".")
                    if numeric {
                        if !inNumber { body += numbers[Int(rng.next() % UInt64(numbers.count))] }
                        inNumber = true
                        continue
                    }
                    inNumber = false
                    if inString && ch.isNumber && rng.next() % 20 == 0 { body += "9"; continue }
                    body.append(ch)
                }
                let bytes = Array(body.utf8)
                if shape.matches(bytes) {
                    hits += 1
                    let expected = reference(bytes)
                    XCTAssertEqual(expected.results, shape.outcome.results, body)
                    XCTAssertEqual(expected.errors, [], body)
                }
            }
            XCTAssertGreaterThan(hits, 0, template)
        }
    }

    func testReusedOutcomeIsReset() {
        var outcome = ResponseOutcome(status: 0)
        ResponseInspector.inspect(status: 503, body: Array(Self.samples[3].utf8), into: &outcome)
        XCTAssertEqual(outcome.results.count, 1)
        XCTAssertEqual(outcome.errors.count, 1)
        ResponseInspector.inspect(status: 200, body: Array(Self.samples[0].utf8), into: &outcome)
        XCTAssertEqual(outcome, ResponseOutcome(status: 200, results: [.init(variant: nil, queueMs: nil, inferenceMs: nil, batchSize: nil)]))
        ResponseInspector.inspect(status: 200, body: Array("OK".utf8), into: &outcome)
        XCTAssertEqual(outcome, ResponseOutcome(status: 200))
    }

    func testOpenInferenceResponsesNameTheModelAndTopLabel() {
        let body = #"{"model_name":"squeezenet1.1","outputs":[{"name":"o","datatype":"BYTES","shape":[1,2],"data":["0.7:207:golden retriever","0.1:1:x"]}]}"#
        let outcome = ResponseInspector.inspect(status: 200, body: Array(body.utf8))
        XCTAssertEqual(outcome.results, [.init(variant: "squeezenet1.1", label: "golden retriever")])
        XCTAssertTrue(outcome.isSuccess)
        XCTAssertFalse(ResponseInspector.inspect(status: 404, body: Array(#"{"error":"no model"}"#.utf8)).isSuccess)
    }
}
