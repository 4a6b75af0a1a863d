import Foundation
import GlimpseTestSupport
import XCTest

/// `dashboards/`: the Prometheus scrape config passes promtool, the Grafana dashboard parses, its PromQL
/// parses (promtool, as recording rules), and every metric and label it selects exists in a live `/metrics`.
final class DashboardTests: XCTestCase {
    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("dashboards")

    func testPromtoolAcceptsScrapeConfig() throws {
        let (status, report) = try runTool(try tool("promtool"), ["check", "config", Self.folder.appendingPathComponent("prometheus.yml").path])
        XCTAssertEqual(status, 0, report)
        XCTAssertTrue(report.contains("SUCCESS"), report)
    }

    func testDashboardParsesAndItsPromQLIsValid() throws {
        let dashboard = try Self.loadDashboard()
        XCTAssertGreaterThanOrEqual(dashboard["schemaVersion"] as? Int ?? 0, 36)
        let variables = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        XCTAssertTrue(variables.contains { $0["name"] as? String == "DS_PROMETHEUS" && $0["type"] as? String == "datasource" },
                      "the dashboard needs a DS_PROMETHEUS data source variable")

        let panels = Self.panels(in: dashboard).filter { $0["type"] as? String != "row" }
        XCTAssertGreaterThanOrEqual(panels.count, 10)
        for panel in panels {
            let title = panel["title"] as? String ?? "?"
            let uid = (panel["datasource"] as? [String: Any])?["uid"] as? String
            XCTAssertEqual(uid, "${DS_PROMETHEUS}", "panel \(title) must use the DS_PROMETHEUS variable")
            XCTAssertFalse((panel["targets"] as? [[String: Any]] ?? []).isEmpty, "panel \(title) has no query")
        }

        // promtool parses every expression as a recording rule (Grafana's variables filled in first).
        let expressions = Self.expressions(in: dashboard)
        XCTAssertGreaterThanOrEqual(expressions.count, panels.count)
        var rules = "groups:\n  - name: dashboard\n    rules:\n"
        for (i, e) in expressions.enumerated() {
            let quoted = Self.substituteVariables(e.expr).replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            rules += "      - record: dashboard:expr_\(i)\n        expr: \"\(quoted)\"\n"
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("glimpse-dashboard-rules-\(UUID().uuidString).yml")
        try rules.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let (status, report) = try runTool(try tool("promtool"), ["check", "rules", file.path])
        XCTAssertEqual(status, 0, report)
        XCTAssertTrue(report.contains("\(expressions.count) rules found"), report)
    }

    func testMetricNameExtraction() {
        let expr = #"histogram_quantile(0.99, sum by (le, stage) (rate(glimpse_request_stage_seconds_bucket{stage="total", model=~"$model"}[$__rate_interval]))) / on(instance) group_left sum(up offset 5m) or vector(1e3)"#
        XCTAssertEqual(Self.metricNames(in: expr), ["glimpse_request_stage_seconds_bucket", "up"])
        XCTAssertEqual(Self.selectors(in: Self.substituteVariables(expr)).map(\.name), ["glimpse_request_stage_seconds_bucket"])
        XCTAssertEqual(Self.selectors(in: expr).first?.matchers.map(\.label), ["stage", "model"])
    }

    func testDashboardOnlyUsesMetricsAndLabelsOfALiveServer() throws {
        let server = try GlimpseProcess(arguments: ["--models", try TestServer.modelFolder()])
        defer { server.stop() }
        let digit = try SharedData.data("images/digits/torchserve_4.png")
        for model in ["mnist-8", "mnist-8", "squeezenet1.1"] {
            let reply = try ExternalClient.curl(server.base + "/rpc", body: RPC.classifyBody(image: digit, model: model))
            XCTAssertEqual(reply.status, 200)
        }
        // One error, so that outcome="error" series exist.
        _ = try ExternalClient.curl(server.base + "/rpc", body: RPC.classifyBody(image: digit, model: "no-such-model"))
        let metrics = try ExternalClient.curl(server.base + "/metrics", http2: false)
        XCTAssertEqual(metrics.status, 200)
        let live = Self.liveSeries(String(decoding: metrics.body, as: UTF8.self))
        XCTAssertFalse(live.isEmpty, "no samples in /metrics")

        let dashboard = try Self.loadDashboard()
        // HAProxy's panels are checked against a live HAProxy (HAProxyClusterTests).
        let checked = Self.assertSeriesExist(in: dashboard, live: live, source: "/metrics") { !$0.hasPrefix("haproxy_") }
        XCTAssertGreaterThan(checked, 20)
        // Template variables take their values from metrics too.
        let variables = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        for variable in variables where variable["type"] as? String == "query" {
            let definition = variable["definition"] as? String ?? ""
            let names = Self.metricNames(in: definition.replacingOccurrences(of: #",\s*\w+\s*\)"#, with: ")", options: .regularExpression))
            XCTAssertFalse(names.isEmpty, "variable \(variable["name"] ?? "?") has no metric: \(definition)")
            for name in names { XCTAssertNotNil(live[name], "variable \(variable["name"] ?? "?"): \(name) is not in /metrics") }
        }
    }

    // MARK: - Dashboard JSON

    /// Asserts that every metric the dashboard selects (of those `include` picks) is in `live`, with the
    /// labels it matches on and the fixed label values it asks for; returns how many metric uses it checked.
    static func assertSeriesExist(in dashboard: [String: Any], live: [String: [[String: String]]], source: String,
                                  include: (String) -> Bool) -> Int {
        var checked = 0
        for (title, expr) in expressions(in: dashboard) {
            let names = metricNames(in: expr)
            XCTAssertFalse(names.isEmpty, "no metric found in \(title): \(expr)")
            // Histograms are exposed only as _bucket, _sum and _count samples: a bare family name selects nothing.
            for name in names where include(name) {
                XCTAssertNotNil(live[name], "\(title): \(name) is not in \(source) (\(expr))")
                checked += 1
            }
            // Every label matched (other than the target labels Prometheus adds) exists on that metric, and a
            // fixed value (`stage="total"`) is one the server reports.
            for selector in selectors(in: substituteVariables(expr)) where include(selector.name) {
                guard let series = live[selector.name] else { continue }
                for m in selector.matchers where !["instance", "job"].contains(m.label) {
                    XCTAssertTrue(series.contains { $0[m.label] != nil }, "\(title): \(selector.name) has no label \(m.label)")
                    if m.op == "=" {
                        XCTAssertTrue(series.contains { $0[m.label] == m.value },
                                      "\(title): no \(selector.name) series with \(m.label)=\"\(m.value)\"")
                    }
                }
            }
        }
        return checked
    }

    static func loadDashboard() throws -> [String: Any] {
        let data = try Data(contentsOf: Self.folder.appendingPathComponent("glimpse.json"))
        guard let dashboard = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw TestServerError(description: "glimpse.json is not a JSON object")
        }
        return dashboard
    }

    /// All panels, including those nested in collapsed rows.
    static func panels(in dashboard: [String: Any]) -> [[String: Any]] {
        func walk(_ panels: [[String: Any]]) -> [[String: Any]] {
            panels.flatMap { [$0] + walk($0["panels"] as? [[String: Any]] ?? []) }
        }
        return walk(dashboard["panels"] as? [[String: Any]] ?? [])
    }

    static func expressions(in dashboard: [String: Any]) -> [(title: String, expr: String)] {
        panels(in: dashboard).flatMap { panel in
            (panel["targets"] as? [[String: Any]] ?? []).compactMap { target in
                (target["expr"] as? String).map { (panel["title"] as? String ?? "?", $0) }
            }
        }
    }

    // MARK: - PromQL

    /// Grafana's interval variables become durations, every other variable a match-all regex.
    static func substituteVariables(_ expr: String) -> String {
        var out = expr
        for (name, value) in [("__rate_interval", "1m"), ("__interval", "1m"), ("__range", "1h")] {
            out = out.replacingOccurrences(of: "${\(name)}", with: value).replacingOccurrences(of: "$\(name)", with: value)
        }
        return out.replacingOccurrences(of: #"\$\{?\w+\}?"#, with: ".*", options: .regularExpression)
    }

    /// Metric names in a PromQL expression: identifiers left once strings, label matchers, ranges and
    /// grouping clauses are removed, that are neither functions/aggregations (followed by `(`) nor keywords.
    static func metricNames(in expr: String) -> Set<String> {
        var s = substituteVariables(expr)
        for pattern in [#""(?:[^"\\]|\\.)*""#, #"\{[^}]*\}"#, #"\[[^\]]*\]"#,
                        #"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)"#] {
            s = s.replacingOccurrences(of: pattern, with: " ", options: .regularExpression)
        }
        let keywords: Set = ["by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset",
                             "and", "or", "unless", "inf", "nan", "Inf", "NaN"]
        guard let regex = try? NSRegularExpression(pattern: #"(?<![A-Za-z0-9_:.])[A-Za-z_:][A-Za-z0-9_:]*"#) else { return [] }
        var names = Set<String>()
        for match in regex.matches(in: s, range: NSRange(s.startIndex..., in: s)) {
            guard let range = Range(match.range, in: s) else { continue }
            let token = String(s[range])
            let next = s[range.upperBound...].first { $0 != " " && $0 != "\n" }
            if next == "(" || keywords.contains(token) { continue }
            names.insert(token)
        }
        return names
    }

    struct Matcher { var label: String, op: String, value: String }

    /// `name{label op "value", ...}` selectors of an expression.
    static func selectors(in expr: String) -> [(name: String, matchers: [Matcher])] {
        guard let selector = try? NSRegularExpression(pattern: #"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}"#),
              let matcher = try? NSRegularExpression(pattern: #"([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!=|!~|=)\s*"((?:[^"\\]|\\.)*)""#)
        else { return [] }
        return selector.matches(in: expr, range: NSRange(expr.startIndex..., in: expr)).compactMap { m in
            guard let name = Range(m.range(at: 1), in: expr), let body = Range(m.range(at: 2), in: expr) else { return nil }
            let text = String(expr[body])
            let matchers = matcher.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { mm -> Matcher? in
                guard let l = Range(mm.range(at: 1), in: text), let o = Range(mm.range(at: 2), in: text),
                      let v = Range(mm.range(at: 3), in: text) else { return nil }
                return Matcher(label: String(text[l]), op: String(text[o]), value: String(text[v]))
            }
            return (String(expr[name]), matchers)
        }
    }

    /// Sample name → the label sets of its series, from the Prometheus text format.
    static func liveSeries(_ text: String) -> [String: [[String: String]]] {
        guard let label = try? NSRegularExpression(pattern: #"([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)""#) else { return [:] }
        var out: [String: [[String: String]]] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let name = String(line.prefix { $0 != "{" && $0 != " " })
            guard !name.isEmpty else { continue }
            var labels: [String: String] = [:]
            if let open = line.firstIndex(of: "{"), let close = line.lastIndex(of: "}"), open < close {
                let body = String(line[line.index(after: open)..<close])
                for m in label.matches(in: body, range: NSRange(body.startIndex..., in: body)) {
                    if let k = Range(m.range(at: 1), in: body), let v = Range(m.range(at: 2), in: body) {
                        labels[String(body[k])] = String(body[v])
                    }
                }
            }
            out[name, default: []].append(labels)
        }
        return out
    }

    // MARK: - Tools

    func tool(_ name: String) throws -> String {
        for dir in ["/usr/bin", "/usr/local/bin"] where FileManager.default.isExecutableFile(atPath: "\(dir)/\(name)") {
            return "\(dir)/\(name)"
        }
        throw TestServerError(description: "\(name) is not installed (scripts/setup.sh --test installs Debian's prometheus package)")
    }

    /// Runs a tool to completion (promtool finishes in well under a second; the limit is for a slow,
    /// loaded machine) and returns its status and output, both streams.
    func runTool(_ tool: String, _ arguments: [String]) throws -> (Int32, String) {
        let result = try ChildProcess.run(tool, arguments, timeLimit: 120)
        return (result.status, result.log)
    }
}
