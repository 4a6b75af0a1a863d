@testable import GlimpseServing
import XCTest

/// Per-variant CPU outside the engine, told apart from made-up windows.
final class VariantOverheadTests: XCTestCase {
    /// Non-engine CPU of a window where each variant's requests cost exactly its figure (ns).
    private func cpu(_ requests: [String: Int], _ truth: [String: Double]) -> Double {
        requests.reduce(0) { $0 + Double($1.value) * (truth[$1.key] ?? 0) }
    }

    func testAloneThenSplitWindowsTellTheVariantsApart() throws {
        let truth = ["large": 450_000.0, "small": 170_000.0]
        var o = VariantOverhead()
        // The large variant alone (the load rising before the split starts): its figure, quickly.
        for _ in 0..<3 {
            let w = ["large": 1000]
            o.observe(nonEngineNanos: cpu(w, truth), requests: w, prior: 300_000)
        }
        XCTAssertEqual(try XCTUnwrap(o.overhead(of: "large")), 450_000, accuracy: 10_000)
        XCTAssertNil(o.overhead(of: "small"), "no window has served small yet")
        // Then split windows at one mix: with large known, they pin small.
        for _ in 0..<10 {
            let w = ["large": 600, "small": 1400]
            o.observe(nonEngineNanos: cpu(w, truth), requests: w, prior: 300_000)
        }
        XCTAssertEqual(try XCTUnwrap(o.overhead(of: "small")), 170_000, accuracy: 10_000)
        XCTAssertEqual(try XCTUnwrap(o.overhead(of: "large")), 450_000, accuracy: 10_000)
    }

    /// Windows of one mix only say what the mix costs, not what each variant does: neither figure
    /// is given, and the caller falls back to the figure of all requests.
    func testOneMixAloneTellsNothingApart() {
        var o = VariantOverhead()
        for _ in 0..<30 {
            let w = ["large": 600, "small": 1400]
            o.observe(nonEngineNanos: cpu(w, ["large": 450_000, "small": 170_000]), requests: w, prior: 250_000)
        }
        XCTAssertNil(o.overhead(of: "large"))
        XCTAssertNil(o.overhead(of: "small"))
    }

    /// A figure follows its variant when it changes (drift), and forgotten variants go.
    func testFiguresFollowChangesAndUnloadedVariantsGo() throws {
        var o = VariantOverhead()
        for _ in 0..<5 { o.observe(nonEngineNanos: 200e6, requests: ["a": 1000], prior: 100_000) }
        XCTAssertEqual(try XCTUnwrap(o.overhead(of: "a")), 200_000, accuracy: 2_000)
        for _ in 0..<20 { o.observe(nonEngineNanos: 300e6, requests: ["a": 1000], prior: 100_000) }
        XCTAssertEqual(try XCTUnwrap(o.overhead(of: "a")), 300_000, accuracy: 10_000)
        o.observe(nonEngineNanos: 100e6, requests: ["b": 1000], prior: 100_000)
        o.keep(only: ["b"])
        XCTAssertNil(o.overhead(of: "a"))
        XCTAssertEqual(o.names, ["b"])
    }

    /// In `RequestOverhead`: only windows where the process used the cores it gets update the
    /// figures, and a variant's capacity uses its own once known.
    func testRequestOverheadUsesBusyWindowsAndEachVariantsFigure() throws {
        let second: UInt64 = 1_000_000_000
        var o = RequestOverhead(cores: 2, windowNanos: second, minRequests: 50, weight: 0.5)
        o.observe(now: 0, processCPU: 0, engineCPU: 0, requests: 0, requestsByVariant: [:])
        // A light window (0.5 of 2 cores): no per-variant figure from it.
        o.observe(now: second, processCPU: 500_000_000, engineCPU: 100_000_000, requests: 1000, requestsByVariant: ["small": 1000])
        XCTAssertNil(o.variants.overhead(of: "small"))
        // Busy windows: small alone at 170 µs per request outside the engine.
        var process: UInt64 = 500_000_000, engine: UInt64 = 100_000_000, small = 1000
        for t in 2...4 {
            process += 1_900_000_000; engine += 1_900_000_000 - 8000 * 170_000; small += 8000
            o.observe(now: UInt64(t) * second, processCPU: process, engineCPU: engine, requests: small, requestsByVariant: ["small": small])
        }
        XCTAssertEqual(try XCTUnwrap(o.variants.overhead(of: "small")), 170_000, accuracy: 5_000)
        let own = try XCTUnwrap(o.capacity(engineCPUNanosPerItem: 100_000, variant: "small"))
        XCTAssertEqual(own, o.availableCores * 1e9 / (100_000 + (o.variants.overhead(of: "small") ?? 0)), accuracy: 1e-6)
        // A variant without its own figure: the lowest recent figure of all requests.
        let other = try XCTUnwrap(o.capacity(engineCPUNanosPerItem: 100_000, variant: "large"))
        XCTAssertEqual(other, o.availableCores * 1e9 / (100_000 + (o.capacityNanosPerRequest ?? 0)), accuracy: 1e-6)
    }
}
