/// A dependency-free line chart in SVG. Every point is a `<circle>` carrying its raw values in
/// `data-series`, `data-x` and `data-y`, so tests (and people) can read the numbers back.
public struct SVGChart: Sendable {
    public struct Series: Sendable {
        public var name: String
        public var points: [(x: Double, y: Double)]
        public init(name: String, points: [(x: Double, y: Double)]) {
            self.name = name
            self.points = points
        }
    }

    public var title: String
    public var xLabel: String
    public var yLabel: String
    public var series: [Series]
    public var width = 800.0
    public var height = 480.0

    public init(title: String, xLabel: String, yLabel: String, series: [Series]) {
        self.title = title
        self.xLabel = xLabel
        self.yLabel = yLabel
        self.series = series
    }

    private static let colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]

    public func render() -> String {
        let left = 70.0, right = 160.0, top = 40.0, bottom = 50.0
        let plotW = width - left - right, plotH = height - top - bottom
        let all = series.flatMap(\.points).filter { $0.x.isFinite && $0.y.isFinite }
        let xTicks = Self.ticks(min: all.map(\.x).min() ?? 0, max: all.map(\.x).max() ?? 1)
        let yTicks = Self.ticks(min: 0, max: all.map(\.y).max() ?? 1)
        let x0 = xTicks.first ?? 0, x1 = xTicks.last ?? 1, y1 = yTicks.last ?? 1
        func px(_ x: Double) -> Double { left + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * plotW }
        func py(_ y: Double) -> Double { top + plotH - (y1 > 0 ? y / y1 : 0) * plotH }

        var s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(n(width))\" height=\"\(n(height))\" viewBox=\"0 0 \(n(width)) \(n(height))\" font-family=\"sans-serif\" font-size=\"12\">\n"
        s += "<rect x=\"0\" y=\"0\" width=\"\(n(width))\" height=\"\(n(height))\" fill=\"white\"/>\n"
        s += "<text x=\"\(n(width / 2))\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">\(Self.escape(title))</text>\n"
        s += "<g stroke=\"#ddd\">\n"
        for t in yTicks { s += "<line x1=\"\(n(left))\" y1=\"\(n(py(t)))\" x2=\"\(n(left + plotW))\" y2=\"\(n(py(t)))\"/>\n" }
        for t in xTicks { s += "<line x1=\"\(n(px(t)))\" y1=\"\(n(top))\" x2=\"\(n(px(t)))\" y2=\"\(n(top + plotH))\"/>\n" }
        s += "</g>\n<g>\n"
        for t in yTicks { s += "<text x=\"\(n(left - 6))\" y=\"\(n(py(t) + 4))\" text-anchor=\"end\">\(Self.label(t))</text>\n" }
        for t in xTicks { s += "<text x=\"\(n(px(t)))\" y=\"\(n(top + plotH + 18))\" text-anchor=\"middle\">\(Self.label(t))</text>\n" }
        s += "</g>\n"
        s += "<rect x=\"\(n(left))\" y=\"\(n(top))\" width=\"\(n(plotW))\" height=\"\(n(plotH))\" fill=\"none\" stroke=\"#333\"/>\n"
        s += "<text x=\"\(n(left + plotW / 2))\" y=\"\(n(height - 10))\" text-anchor=\"middle\">\(Self.escape(xLabel))</text>\n"
        s += "<text x=\"16\" y=\"\(n(top + plotH / 2))\" text-anchor=\"middle\" transform=\"rotate(-90 16 \(n(top + plotH / 2)))\">\(Self.escape(yLabel))</text>\n"
        for (i, line) in series.enumerated() {
            let color = Self.colors[i % Self.colors.count]
            let points = line.points.filter { $0.x.isFinite && $0.y.isFinite }
            let name = Self.escape(line.name)
            s += "<g class=\"series\" data-name=\"\(name)\" stroke=\"\(color)\" fill=\"\(color)\">\n"
            if points.count > 1 {
                let path = points.map { "\(n(px($0.x))),\(n(py($0.y)))" }.joined(separator: " ")
                s += "<polyline fill=\"none\" stroke-width=\"2\" points=\"\(path)\"/>\n"
            }
            for p in points {
                s += "<circle cx=\"\(n(px(p.x)))\" cy=\"\(n(py(p.y)))\" r=\"3\" data-series=\"\(name)\" data-x=\"\(p.x)\" data-y=\"\(p.y)\"><title>\(name): \(Self.label(p.x)), \(Self.label(p.y))</title></circle>\n"
            }
            let ly = top + 10 + Double(i) * 18
            s += "<rect x=\"\(n(left + plotW + 14))\" y=\"\(n(ly - 8))\" width=\"12\" height=\"12\"/>\n"
            s += "<text x=\"\(n(left + plotW + 32))\" y=\"\(n(ly + 2))\" stroke=\"none\" fill=\"#000\">\(name)</text>\n"
            s += "</g>\n"
        }
        s += "</svg>\n"
        return s
    }

    /// About five round tick values covering [min, max].
    static func ticks(min lo: Double, max hi: Double) -> [Double] {
        var lo = lo, hi = hi
        if hi <= lo { hi = lo + 1 }
        let raw = (hi - lo) / 5
        let magnitude = pow10(floorLog10(raw))
        let step = [1.0, 2.0, 2.5, 5.0, 10.0].map { $0 * magnitude }.first { $0 >= raw } ?? raw
        lo = (lo / step).rounded(.down) * step
        var out: [Double] = []
        var t = lo
        while t < hi + step * 0.999, out.count < 50 {
            out.append(t)
            t += step
        }
        return out
    }

    private static func floorLog10(_ v: Double) -> Int {
        var e = 0, x = v
        guard x > 0, x.isFinite else { return 0 }
        while x >= 10 { x /= 10; e += 1 }
        while x < 1 { x *= 10; e -= 1 }
        return e
    }

    private static func pow10(_ e: Int) -> Double {
        var r = 1.0
        for _ in 0..<abs(e) { r *= 10 }
        return e < 0 ? 1 / r : r
    }

    static func label(_ v: Double) -> String {
        if v == v.rounded() && abs(v) < 1e12 { return String(Int(v)) }
        return SummaryTable.fmt(v, abs(v) < 1 ? 3 : (abs(v) < 100 ? 2 : 1))
    }

    private func n(_ v: Double) -> String { SummaryTable.fmt(v, 1) }

    static func escape(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(c)
            }
        }
        return out
    }
}

extension SVGChart {
    /// Latency percentiles vs achieved throughput over a sweep (one point per run).
    public static func sweep(_ results: [RunResult]) -> SVGChart {
        let sorted = results.sorted { $0.achievedRate < $1.achievedRate }
        func line(_ name: String, _ key: (LatencySummary) -> Double) -> Series {
            Series(name: name, points: sorted.map { (x: $0.achievedRate, y: key($0.latency)) })
        }
        return SVGChart(title: "Latency vs throughput", xLabel: "achieved throughput (req/s)", yLabel: "latency (ms)",
                        series: [line("p50", \.p50), line("p90", \.p90), line("p99", \.p99), line("p99.9", \.p999)])
    }

    /// Latency over time for one run (one point per second).
    public static func timeline(_ result: RunResult) -> SVGChart {
        func line(_ name: String, _ key: (TimelinePoint) -> Double) -> Series {
            Series(name: name, points: result.timeline.map { (x: Double($0.second), y: key($0)) })
        }
        return SVGChart(title: "Latency over time (\(result.mode))", xLabel: "time since warm-up (s)", yLabel: "latency (ms)",
                        series: [line("p50", \.p50), line("p99", \.p99), line("max", \.max)])
    }
}
