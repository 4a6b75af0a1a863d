import Foundation
import GlimpseServing
import Metrics
import Prometheus

/// Bootstraps swift-prometheus as the swift-metrics backend and renders `/metrics`.
struct PrometheusExport: Sendable {
    let registry = PrometheusCollectorRegistry()

    /// Makes Prometheus the process's swift-metrics backend and returns the handles to inject into
    /// the serving library (which records only into what it is given).
    func bootstrap() -> MetricHandles {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = GlimpseMetrics.secondsBuckets.map { .nanoseconds(Int64($0 * 1e9)) }
        factory.valueHistogramBuckets = GlimpseMetrics.valueBuckets
        MetricsSystem.bootstrap(factory)
        return MetricHandles(factory: factory)
    }

    /// The exposition text, with a `# HELP` line added before each of Glimpse's `# TYPE` lines.
    func render() -> [UInt8] {
        PrometheusExport.addHelp(to: registry.emitToBuffer(), help: GlimpseMetrics.help)
    }

    static func addHelp(to text: [UInt8], help: [String: String]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.count + help.count * 80)
        for line in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            if line.starts(with: Array("# TYPE ".utf8)) {
                let name = String(decoding: line.dropFirst(7).prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
                if let h = help[name] {
                    out.append(contentsOf: Array("# HELP \(name) \(h)\n".utf8))
                }
            }
            out.append(contentsOf: line)
            out.append(UInt8(ascii: "\n"))
        }
        if out.last == UInt8(ascii: "\n") && text.last == UInt8(ascii: "\n") { out.removeLast() }
        return out
    }
}
