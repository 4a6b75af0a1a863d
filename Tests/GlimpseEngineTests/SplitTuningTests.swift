@testable import GlimpseEngine
import XCTest

/// `.auto` batch splitting's trial: alternating runs, best of each way, and more runs while the two
/// ways time close.
final class SplitTuningTests: XCTestCase {
    /// Feeds the trial run times (ms) by way until it decides; returns the decision and the runs it took.
    private func trial(split: (Int) -> Double, whole: (Int) -> Double) -> (decision: Bool?, runs: Int) {
        var tuning = SplitTuning()
        var n = (split: 0, whole: 0)
        var runs = 0
        while tuning.decision == nil, runs < 100 {
            let (isSplit, timed) = tuning.nextRun()
            runs += 1
            guard timed else { continue }
            let ms: Double
            if isSplit { ms = split(n.split); n.split += 1 } else { ms = whole(n.whole); n.whole += 1 }
            tuning.record(split: isSplit, elapsed: .nanoseconds(Int64(ms * 1e6)))
        }
        return (tuning.decision, runs)
    }

    func testClearWinnerIsDecidedAfterTheMinimumRuns() {
        let r = trial(split: { _ in 10 }, whole: { _ in 14 })
        XCTAssertEqual(r.decision, true)
        XCTAssertEqual(r.runs, SplitTuning.trialRuns)
        let w = trial(split: { _ in 14 }, whole: { _ in 10 })
        XCTAssertEqual(w.decision, false)
        XCTAssertEqual(w.runs, SplitTuning.trialRuns)
    }

    /// Split is 8% faster, but a slow phase caught its first three timed runs (+20%): three runs a
    /// way would pick whole; the trial goes on and finds split's real time.
    func testCloseWaysRunLongerAndSurviveASlowPhase() {
        let r = trial(split: { $0 < 3 ? 11.0 : 9.2 }, whole: { _ in 10 })
        XCTAssertEqual(r.decision, true)
        XCTAssertGreaterThan(r.runs, SplitTuning.trialRuns)
        XCTAssertLessThanOrEqual(r.runs, SplitTuning.maxTrialRuns)
    }

    /// Two ways that stay close end the trial at the maximum, with the faster best kept.
    func testTiesEndAtTheMaximumRuns() {
        let r = trial(split: { _ in 10.2 }, whole: { _ in 10 })
        XCTAssertEqual(r.decision, false)
        XCTAssertEqual(r.runs, SplitTuning.maxTrialRuns)
    }
}
