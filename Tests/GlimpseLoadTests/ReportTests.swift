import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import GlimpseLoad
import XCTest

final class ReportTests: XCTestCase {
    private func result(concurrency: Int, rate: Double, p50: Double) -> RunResult {
        var recorder = LoadRecorder()
        recorder.completed = Int(rate)
        recorder.succeeded = Int(rate)
        recorder.lastCompletionNs = 1_000_000_000
        for i in 0..<100 { _ = recorder.latency.record(UInt64(p50 * 1000) + UInt64(i)) }
        recorder.variants = ["v-fp32": 3, "v-int8": 1]
        recorder.byRPCError = ["-32000 queue_full": 2]
        recorder.timeline = [0: recorder.latency, 1: recorder.latency]
        return RunResult(mode: .closed(concurrency: concurrency), connections: 1, recorder: recorder, measureStartNs: 0, measureEndNs: 1_000_000_000)
    }

    private var sweep: [RunResult] { [result(concurrency: 1, rate: 100, p50: 2), result(concurrency: 4, rate: 350, p50: 5), result(concurrency: 16, rate: 420, p50: 20)] }

    func testCSVHasOneRowPerRun() {
        let lines = FileReports.csv(sweep).split(separator: "\n")
        XCTAssertEqual(lines.count, 4)
        XCTAssertEqual(String(lines[0]), FileReports.csvHeader)
        let row = lines[2].split(separator: ",", omittingEmptySubsequences: false)
        XCTAssertEqual(row.count, FileReports.csvHeader.split(separator: ",").count)
        XCTAssertEqual(row[0], "closed c=4")
        XCTAssertEqual(Double(row[7]) ?? 0, 350, accuracy: 0.01)  // rate_per_s
        XCTAssertEqual(Double(row[8]) ?? 0, 5.05, accuracy: 0.01)  // p50_ms
    }

    func testJSONRoundTrips() throws {
        let data = try FileReports.json(sweep)
        let decoded = try JSONDecoder().decode([String: [RunResult]].self, from: data)
        XCTAssertEqual(decoded["runs"], sweep)
        let text = String(decoding: data, as: UTF8.self)
        XCTAssertTrue(text.contains("\"queue_full\"") || text.contains("queue_full"))
    }

    func testSummaryTableMentionsErrorsAndVariants() {
        let text = SummaryTable.render(sweep)
        XCTAssertTrue(text.contains("p99.9 ms"))
        XCTAssertTrue(text.contains("-32000 queue_full=2"))
        XCTAssertTrue(text.contains("v-fp32=3"))
    }

    func testSweepSVGIsWellFormedAndHoldsThePoints() throws {
        let svg = SVGChart.sweep(sweep).render()
        let points = try parse(svg)
        let p50 = points.filter { $0.series == "p50" }
        XCTAssertEqual(p50.map(\.x), [100, 350, 420])
        XCTAssertEqual(p50[1].y, sweep[1].latency.p50, accuracy: 1e-9)
        XCTAssertEqual(Set(points.map(\.series)), ["p50", "p90", "p99", "p99.9"])
    }

    func testTimelineSVGAndEscaping() throws {
        var chart = SVGChart.timeline(sweep[0])
        chart.title = "a < b & \"c\""
        let points = try parse(chart.render())
        XCTAssertEqual(points.filter { $0.series == "p99" }.map(\.x), [0, 1])
    }

    private struct Point { var series: String; var x: Double; var y: Double }

    /// Parses with Foundation's XMLParser (fails on malformed XML) and collects the circles' data.
    private func parse(_ svg: String) throws -> [Point] {
        final class Collector: NSObject, XMLParserDelegate {
            var points: [Point] = []
            var root: String?
            func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                        attributes: [String: String] = [:]) {
                if root == nil { root = name }
                if name == "circle", let s = attributes["data-series"], let x = attributes["data-x"].flatMap(Double.init),
                   let y = attributes["data-y"].flatMap(Double.init) {
                    points.append(Point(series: s, x: x, y: y))
                }
            }
        }
        let parser = XMLParser(data: Data(svg.utf8))
        let collector = Collector()
        parser.delegate = collector
        XCTAssertTrue(parser.parse(), "SVG is not well-formed: \(String(describing: parser.parserError))")
        XCTAssertEqual(collector.root, "svg")
        return collector.points
    }
}
