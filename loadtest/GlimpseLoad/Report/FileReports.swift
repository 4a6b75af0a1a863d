import Foundation

/// CSV and JSON forms of run results.
public enum FileReports {
    public static let csvHeader = "mode,target,connections,elapsed_s,requests,succeeded,errors,rate_per_s,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,mean_ms,server_queue_mean_ms,server_queue_p50_ms,server_queue_p99_ms,server_inference_mean_ms,server_inference_p50_ms,server_inference_p99_ms,offered,slo_ms,within_slo,slo_attainment"

    /// One row per run (a sweep point).
    public static func csv(_ results: [RunResult]) -> String {
        var lines = [csvHeader]
        for r in results {
            let numbers: [Double] = [r.target, Double(r.connections), r.elapsed, Double(r.requests), Double(r.succeeded), Double(r.errors),
                                     r.achievedRate, r.latency.p50, r.latency.p90, r.latency.p99, r.latency.p999, r.latency.max, r.latency.mean,
                                     r.serverQueue.mean, r.serverQueue.p50, r.serverQueue.p99,
                                     r.serverInference.mean, r.serverInference.p50, r.serverInference.p99]
            // Absent figures (no SLO given) are empty fields.
            let optional: [Double?] = [r.offered.map(Double.init), r.sloMs, r.withinSLO.map(Double.init), r.sloAttainment]
            lines.append(([csvField(r.mode)] + numbers.map { number($0) } + optional.map { $0.map(number) ?? "" }).joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `{"runs": [...]}` with every field of `RunResult`, keys sorted.
    public static func json(_ results: [RunResult]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(["runs": results])
    }

    public static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    static func number(_ v: Double) -> String {
        guard v.isFinite else { return "" }
        return v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(format: "%.4f", v)
    }

    static func csvField(_ s: String) -> String {
        s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) ? "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : s
    }
}
