@testable import GlimpseLoad
import Histogram
import XCTest

/// `HistogramStats` must give exactly what the library's `mean` and `valueAtPercentile` give.
final class HistogramStatsTests: XCTestCase {
    func testMatchesLibraryOnRandomHistograms() {
        var rng = SplitMix64(seed: 7)
        let percentiles: [Double] = [0, 1, 25, 50, 90, 99, 99.9, 99.99, 100, 150]
        for round in 0..<60 {
            var h = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000,
                                      numberOfSignificantValueDigits: round % 2 == 0 ? .three : .two)
            let n = round == 0 ? 0 : Int(rng.next() % 3000) + 1
            let scale = UInt64(1) << (rng.next() % 24)
            for _ in 0..<n { _ = h.record(1 + rng.next() % scale + (rng.next() % 7 == 0 ? rng.next() % (scale * 50) : 0)) }
            if round % 5 == 1 { _ = h.record(0) }
            let stats = HistogramStats(h, percentiles: percentiles)
            XCTAssertEqual(stats.mean, h.mean, "round \(round)")
            for (i, p) in percentiles.enumerated() {
                XCTAssertEqual(stats.values[i], h.valueAtPercentile(p), "round \(round) p\(p)")
            }
        }
    }

    func testLatencySummaryOfOneValue() {
        var h = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
        _ = h.record(12_345)
        let s = LatencySummary(micros: h)
        XCTAssertEqual(s.count, 1)
        XCTAssertEqual(s.mean, h.mean / 1000)
        XCTAssertEqual(s.p50, Double(h.valueAtPercentile(50)) / 1000)
        XCTAssertEqual(s.p999, Double(h.valueAtPercentile(99.9)) / 1000)
        XCTAssertEqual(s.max, Double(h.max) / 1000)
    }
}
