import Foundation
@testable import GlimpseModelTools
import GlimpseServing
import GlimpseTestSupport
import XCTest

/// `glimpse bench --models` on the embedded models with a tiny time budget, and the manifest edit.
final class ModelBenchmarkTests: XCTestCase {
    var modelsFolder: String { SharedData.repoRoot.appendingPathComponent("models").path }

    func manifestEntries() throws -> [String: [String: Any]] {
        let data = try Data(contentsOf: URL(fileURLWithPath: modelsFolder).appendingPathComponent("models.json"))
        let root = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return try XCTUnwrap(root["models"] as? [String: [String: Any]])
    }

    func testEveryEmbeddedVariantIsMeasuredWithItsManifestAccuracy() throws {
        let energy = EnergyMeter(powercapRoot: "/nonexistent", wattsPerCore: 4)
        let service = InferenceService(configuration: .init(engineThreads: 1, workersPerModel: 1), energy: energy)
        defer { service.shutdown() }
        XCTAssertEqual(service.registry.loadDirectory(modelsFolder), [])
        let options = ModelBenchmark.Options(secondsPerPoint: 0.01, batchSizes: [1, 4], minRuns: 2)
        let rows = try service.registry.all.map { try ModelBenchmark.run($0, options: options, energy: energy, engineThreads: 1) }
        let manifest = try manifestEntries()
        XCTAssertEqual(Set(rows.map(\.model)), Set(manifest.keys), "one row per manifest entry")
        for row in rows {
            let entry = try XCTUnwrap(manifest[row.model])
            XCTAssertEqual(row.accuracy, entry["accuracy"] as? Double, row.model)
            XCTAssertEqual(row.family, entry["family"] as? String)
            XCTAssertEqual(row.variant, entry["variant"] as? String)
            XCTAssertEqual(row.fileBytes, entry["size_bytes"] as? Int, "\(row.model): the manifest's size is the file's")
            XCTAssertGreaterThan(row.latencyMs, 0, row.model)
            XCTAssertFalse(row.points.isEmpty)
            for point in row.points {
                XCTAssertGreaterThanOrEqual(point.runs, 2)
                XCTAssertGreaterThan(point.imagesPerSecond, 0, "\(row.model) batch \(point.batch)")
                XCTAssertGreaterThan(point.joulesPerImage, 0, "\(row.model) batch \(point.batch): CPU time x 4 W")
            }
            XCTAssertEqual(row.energySource, "estimate")
        }
        let table = ModelBenchmark.markdownTable(rows)
        let lines = table.split(separator: "\n")
        XCTAssertEqual(lines.count, 2 + rows.count)
        for row in rows {
            let line = try XCTUnwrap(lines.first { $0.hasPrefix("| \(row.model) |") }, "a line for \(row.model)")
            XCTAssertTrue(line.contains(String(format: "%.2f%%", (row.accuracy ?? 0) * 100)), String(line))
            XCTAssertTrue(line.contains("estimate (CPU time, 4 W per busy core)"))
        }
    }

    func testBatchSizesFollowTheModelInput() {
        XCTAssertEqual(ModelBenchmark.batchSizes(forInput: [-1, 3, 32, 32], requested: [32, 1, 8, 8]), [1, 8, 32])
        XCTAssertEqual(ModelBenchmark.batchSizes(forInput: [1, 1, 28, 28], requested: [1, 8, 32]), [1], "a fixed batch of one")
        XCTAssertEqual(ModelBenchmark.batchSizes(forInput: [4, 3, 8, 8], requested: [1]), [4])
    }

    func testManifestRoundTripsByteForByte() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: modelsFolder).appendingPathComponent("models.json"))
        XCTAssertEqual(try ManifestJSON.parse(data).pythonText(finalNewline: data.last == 0x0A), String(decoding: data, as: UTF8.self))
        // Escapes as Python's json.dumps writes them (ensure_ascii).
        let text = #"{"a": "caf\u00e9 \"q\" \\ \n \u20ac \ud83d\ude00 \u007f", "b": [], "c": {}, "d": [1, 2.50, -3e-05, true, null]}"#
        let value = try ManifestJSON.parse(Data(text.utf8))
        XCTAssertEqual(value["a"], .string("café \"q\" \\ \n € 😀 \u{7F}"))
        XCTAssertEqual(value.pythonText(), """
            {
              "a": "caf\\u00e9 \\"q\\" \\\\ \\n \\u20ac \\ud83d\\ude00 \\u007f",
              "b": [],
              "c": {},
              "d": [
                1,
                2.50,
                -3e-05,
                true,
                null
              ]
            }

            """)
        XCTAssertThrowsError(try ManifestJSON.parse(Data(#"{"a": 1,}"#.utf8)))
        XCTAssertThrowsError(try ManifestJSON.parse(Data(#"{"a": 1} x"#.utf8)))
    }

    func testWritingLatenciesKeepsTheRestOfTheManifest() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: modelsFolder).appendingPathComponent("models.json"))
        let point = ModelBenchmark.Point(batch: 1, runs: 10, medianMs: 1.23456, imagesPerSecond: 810.4, joulesPerImage: 0.0049)
        let big = ModelBenchmark.Point(batch: 8, runs: 10, medianMs: 7.5, imagesPerSecond: 1066.7, joulesPerImage: 0.0037)
        let row = ModelBenchmark.Row(model: "cifar10-small", family: "cifar10", variant: "small", accuracy: 0.773, accuracyDataset: nil,
                                     fileBytes: 398_062, engineThreads: 2, points: [point, big], energySource: "estimate", wattsPerCore: 4)
        let text = try ModelBenchmark.updateManifest(data, rows: [row], command: "glimpse bench --models", machine: "test CPU, 2 cores")
        let before = try JSONSerialization.jsonObject(with: data) as? [String: [String: [String: Any]]]
        let after = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: [String: [String: Any]]]
        let small = try XCTUnwrap(after?["models"]?["cifar10-small"])
        XCTAssertEqual(small["latency_ms"] as? Double, 1.235)
        let record = try XCTUnwrap(small["benchmark"] as? [String: Any])
        XCTAssertEqual(record["best_batch"] as? Int, 8)
        XCTAssertEqual((record["batch_median_ms"] as? [String: Double])?["8"], 7.5)
        XCTAssertEqual(record["energy_source"] as? String, "estimate (CPU time, 4 W per busy core)")
        // Every other member of every entry is as it was, and the other entries are untouched.
        for (name, entry) in before?["models"] ?? [:] {
            let now = try XCTUnwrap(after?["models"]?[name])
            for (key, value) in entry where !(name == "cifar10-small" && ["latency_ms", "benchmark"].contains(key)) {
                XCTAssertEqual(now[key] as? NSObject, value as? NSObject, "\(name).\(key)")
            }
        }
        // The edit is in place: the member order is kept and `benchmark` follows `latency_ms`.
        let keys = try ManifestJSON.parse(Data(text.utf8))["models"]?["cifar10-small"].flatMap { value -> [String]? in
            guard case .object(let members) = value else { return nil }
            return members.map(\.key)
        }
        let original = try ManifestJSON.parse(data)["models"]?["cifar10-small"].flatMap { value -> [String]? in
            guard case .object(let members) = value else { return nil }
            return members.map(\.key)
        }
        var expected = original ?? []
        if let i = expected.firstIndex(of: "latency_ms"), !expected.contains("benchmark") { expected.insert("benchmark", at: i + 1) }
        XCTAssertEqual(keys, expected)
        // Writing the same figures again changes nothing.
        XCTAssertEqual(try ModelBenchmark.updateManifest(Data(text.utf8), rows: [row], command: "glimpse bench --models", machine: "test CPU, 2 cores"), text)
    }
}
