/// Human-readable summary of one run or a sweep.
public enum SummaryTable {
    public static func render(_ results: [RunResult]) -> String {
        var out = ""
        let header = ["mode", "conns", "requests", "errors", "rate/s", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms"]
        var rows = [header]
        for r in results {
            rows.append([r.mode, String(r.connections), String(r.requests), String(r.errors), fmt(r.achievedRate, 1),
                         fmt(r.latency.p50), fmt(r.latency.p90), fmt(r.latency.p99), fmt(r.latency.p999), fmt(r.latency.max)])
        }
        out += table(rows)
        for r in results {
            out += "\n[\(r.mode)] \(r.succeeded) ok of \(r.requests) in \(fmt(r.elapsed, 2)) s"
            if r.calls > r.requests { out += ", \(r.calls) JSON-RPC results (calls x images)" }
            out += "\n"
            if r.serviceTime.count > 0 && r.mode.hasPrefix("closed") == false {
                out += "  from actual send (coordinated-omission-prone): p50 \(fmt(r.serviceTime.p50)) p99 \(fmt(r.serviceTime.p99)) max \(fmt(r.serviceTime.max)) ms\n"
            }
            if r.serverQueue.count > 0 || r.serverInference.count > 0 {
                out += "  server queue     ms: mean \(fmt(r.serverQueue.mean)) p50 \(fmt(r.serverQueue.p50)) p99 \(fmt(r.serverQueue.p99))\n"
                out += "  server inference ms: mean \(fmt(r.serverInference.mean)) p50 \(fmt(r.serverInference.p50)) p99 \(fmt(r.serverInference.p99))\n"
            }
            if let slo = r.sloMs, let within = r.withinSLO, let offered = r.offered {
                out += "  within \(fmt(slo, slo == slo.rounded() ? 0 : 1)) ms (SLO): \(within) of \(offered) offered (\(fmt(100 * (r.sloAttainment ?? 0)))%)\n"
            }
            if let effective = r.effectiveAccuracy, let images = r.labelledOffered, let right = r.correctWithinSLO {
                let within = r.sloMs.map { "within \(fmt($0, $0 == $0.rounded() ? 0 : 1)) ms" } ?? "answered"
                out += "  effective accuracy (correct top-1 \(within), of all offered images): \(right) of \(images) (\(fmt(100 * effective))%)"
                if let answered = r.answeredAccuracy { out += "; accuracy of the answers: \(fmt(100 * answered))%" }
                out += "\n"
            }
            if !r.variants.isEmpty {
                let total = Double(r.variants.values.reduce(0, +))
                out += "  variants: " + r.variants.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { v in
                    var cell = "\(v.key)=\(v.value) (\(fmt(100 * Double(v.value) / max(total, 1), 1))%"
                    if let a = r.variantAccuracy?[v.key] { cell += ", \(fmt(100 * a))% correct" }
                    return cell + ")"
                }.joined(separator: " ") + "\n"
            }
            if !r.byStatus.isEmpty { out += "  HTTP status: " + list(r.byStatus) + "\n" }
            if !r.byRPCError.isEmpty { out += "  JSON-RPC errors (code reason): " + list(r.byRPCError) + "\n" }
            if !r.byTransportError.isEmpty { out += "  transport errors: " + list(r.byTransportError) + "\n" }
            for note in r.notes { out += "  note: \(note)\n" }
        }
        return out
    }

    static func list(_ counts: [String: Int]) -> String {
        counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    }

    static func fmt(_ v: Double, _ digits: Int = 2) -> String {
        guard v.isFinite else { return "-" }
        var s = String(Int((v * pow10(digits)).rounded()))
        if digits == 0 { return s }
        let negative = s.hasPrefix("-")
        if negative { s.removeFirst() }
        while s.count <= digits { s = "0" + s }
        s.insert(".", at: s.index(s.endIndex, offsetBy: -digits))
        return (negative ? "-" : "") + s
    }

    private static func pow10(_ n: Int) -> Double { (0..<n).reduce(1.0) { acc, _ in acc * 10 } }

    static func table(_ rows: [[String]]) -> String {
        guard let first = rows.first else { return "" }
        var widths = first.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            row.enumerated().map { i, cell in
                let pad = String(repeating: " ", count: widths[i] - cell.count)
                return i == 0 ? cell + pad : pad + cell
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }
}
