import Foundation
import GlimpseServing

extension ModelBenchmark {
    /// The markdown table of `glimpse bench --models`.
    public static func markdownTable(_ rows: [Row]) -> String {
        var out = "| model | family | variant | accuracy (data set) | size MB | latency b1 ms | best batch | img/s | J/image | energy source |\n"
        out += "|---|---|---|---|---:|---:|---:|---:|---:|---|\n"
        for r in rows {
            let accuracy = r.accuracy.map { String(format: "%.2f%%", $0 * 100) + (r.accuracyDataset.map { " (\(shortDataset($0)))" } ?? "") } ?? "-"
            let best = r.best
            out += "| \(r.model) | \(r.family) | \(r.variant) | \(accuracy) | \(String(format: "%.2f", Double(r.fileBytes) / 1e6)) "
            out += "| \(String(format: "%.3f", r.latencyMs)) | \(best.map { String($0.batch) } ?? "-") "
            out += "| \(best.map { String(format: "%.0f", $0.imagesPerSecond) } ?? "-") "
            out += "| \(best.map { String(format: "%.5f", $0.joulesPerImage) } ?? "-") | \(sourceLabel(r)) |\n"
        }
        return out
    }

    /// Per model and batch size: median ms per run, img/s, J/image.
    public static func batchTable(_ rows: [Row]) -> String {
        var out = "| model | batch | runs | median ms | img/s | J/image |\n|---|---:|---:|---:|---:|---:|\n"
        for r in rows {
            for p in r.points {
                out += "| \(r.model) | \(p.batch) | \(p.runs) | \(String(format: "%.3f", p.medianMs)) | \(String(format: "%.0f", p.imagesPerSecond)) | \(String(format: "%.5f", p.joulesPerImage)) |\n"
            }
        }
        return out
    }

    static func sourceLabel(_ r: Row) -> String {
        r.energySource == EnergyMeter.Source.rapl.rawValue ? "rapl (package)" : "estimate (CPU time, \(String(format: "%g", r.wattsPerCore)) W per busy core)"
    }

    /// "CIFAR-10 test split, 10,000 JPEG q75 images (../shared/...)" → "CIFAR-10 test split".
    static func shortDataset(_ text: String) -> String {
        String(text.split(separator: ",").first ?? Substring(text)).trimmingCharacters(in: .whitespaces)
    }

    /// Writes each measured model's `latency_ms` (median at batch 1) and a `benchmark` record (per batch
    /// size, throughput, energy, threads, machine) into the manifest text, keeping every other member,
    /// the member order, the number texts and the final newline (or its absence) as they were. Models
    /// not in `rows` are left alone.
    public static func updateManifest(_ text: Data, rows: [Row], command: String, machine: String) throws -> String {
        var root = try ManifestJSON.parse(text)
        guard case .object(let members)? = root["models"] else { throw MetadataError("the manifest has no \"models\" object") }
        var models = ManifestJSON.object(members)
        for r in rows {
            guard var entry = models[r.model], case .object = entry else { continue }
            entry.set("latency_ms", .number(round3(r.latencyMs)), after: "size_bytes")
            var batchMs: [(key: String, value: ManifestJSON)] = []
            var perSecond: [(key: String, value: ManifestJSON)] = []
            for p in r.points {
                batchMs.append((String(p.batch), .number(round3(p.medianMs))))
                perSecond.append((String(p.batch), .number(Int(p.imagesPerSecond.rounded()))))
            }
            var record = ManifestJSON.object([
                ("command", .string(command)),
                ("engine_threads", .number(r.engineThreads)),
                ("batch_median_ms", .object(batchMs)),
                ("images_per_second", .object(perSecond)),
            ])
            if let best = r.best {
                record.set("best_batch", .number(best.batch))
                record.set("joules_per_image", .number((best.joulesPerImage * 1e6).rounded() / 1e6))
            }
            record.set("energy_source", .string(sourceLabel(r)))
            record.set("machine", .string(machine))
            entry.set("benchmark", record, after: "latency_ms")
            models.set(r.model, entry)
        }
        root.set("models", models)
        return root.pythonText(finalNewline: text.last == UInt8(ascii: "\n"))
    }

    static func round3(_ v: Double) -> Double { (v * 1000).rounded() / 1000 }
}
