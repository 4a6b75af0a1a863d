import GlimpseLoad
import XCTest

final class LoadPhaseAndScheduleTests: XCTestCase {
    func testConstantScheduleIsEvenlySpaced() {
        var s = ArrivalSchedule(kind: .constant, rate: 1000, offsetNs: 250_000)
        XCTAssertEqual((0..<4).map { _ in s.next() }, [250_000, 1_250_000, 2_250_000, 3_250_000])
    }

    func testPoissonScheduleHasTheMeanRateAndIsSeeded() {
        var a = ArrivalSchedule(kind: .poisson, rate: 500, seed: 42)
        var b = ArrivalSchedule(kind: .poisson, rate: 500, seed: 42)
        var last: UInt64 = 0
        var gaps: [Double] = []
        for _ in 0..<20_000 {
            let t = a.next()
            XCTAssertEqual(t, b.next())
            XCTAssertGreaterThanOrEqual(t, last)
            gaps.append(Double(t - last))
            last = t
        }
        let mean = gaps.reduce(0, +) / Double(gaps.count)
        XCTAssertEqual(mean, 2_000_000, accuracy: 60_000)  // 1/500 s
        // Exponential gaps: the coefficient of variation is about 1.
        let sd = (gaps.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(gaps.count)).squareRoot()
        XCTAssertEqual(sd / mean, 1, accuracy: 0.05)
    }

    func testPhasesFollowTheClockAndTheCount() {
        var p = RunPhase(startNs: 1_000, warmup: 1, duration: 2, maxRequests: 3, drainTimeout: 1)
        XCTAssertEqual(p.advance(now: 1_000, inFlight: 0), .warmup)
        XCTAssertEqual(p.admit(intendedNs: 1_000), false)  // warm-up: sent, not measured
        XCTAssertEqual(p.advance(now: 1_000_001_000, inFlight: 1), .measuring)
        XCTAssertEqual(p.admit(intendedNs: 1_000_001_000), true)
        XCTAssertEqual(p.admit(intendedNs: 1_000_001_000), true)
        XCTAssertEqual(p.admit(intendedNs: 1_000_001_000), true)
        XCTAssertNil(p.admit(intendedNs: 1_000_001_000))  // max requests reached
        XCTAssertEqual(p.advance(now: 1_000_002_000, inFlight: 2), .draining)
        XCTAssertEqual(p.advance(now: 1_000_003_000, inFlight: 0), .done)
    }

    func testDurationEndsTheRunAndDrainIsBounded() {
        var p = RunPhase(startNs: 0, warmup: 0, duration: 1, maxRequests: 1_000, drainTimeout: 0.5)
        XCTAssertEqual(p.advance(now: 0, inFlight: 0), .measuring)
        XCTAssertNil(p.admit(intendedNs: 1_000_000_000))  // intended after the end
        XCTAssertEqual(p.advance(now: 1_000_000_000, inFlight: 5), .draining)
        XCTAssertEqual(p.advance(now: 1_400_000_000, inFlight: 5), .draining)
        XCTAssertEqual(p.advance(now: 1_500_000_000, inFlight: 5), .done)
    }
}
