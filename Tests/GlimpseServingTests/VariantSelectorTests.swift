@testable import GlimpseServing
import XCTest

/// Dynamic model selection as a pure function: made-up predictions and a fake clock.
final class VariantSelectorTests: XCTestCase {
    typealias C = VariantSelector.Candidate
    let ms: UInt64 = 1_000_000

    func family(large: UInt64?, small: UInt64?, tiny: UInt64? = nil) -> [C] {
        var c = [C(name: "large", accuracy: 0.80, predictedNanos: large), C(name: "small", accuracy: 0.70, predictedNanos: small)]
        if let tiny { c.append(C(name: "tiny", accuracy: 0.50, predictedNanos: tiny)) }
        return c
    }

    func testWithoutDeadlineTheMostAccurateServes() {
        let c = VariantSelector.select(family(large: 500 * ms, small: 10 * ms), deadlineNanos: nil, minAccuracy: nil, state: .init(), now: 0)
        XCTAssertEqual(c?.name, "large")
        XCTAssertEqual(c?.reason, .mostAccurate)
    }

    func testTheMostAccurateVariantMeetingTheDeadline() {
        let fits = VariantSelector.select(family(large: 40 * ms, small: 10 * ms), deadlineNanos: 50 * ms, minAccuracy: nil, state: .init(), now: 0)
        XCTAssertEqual(fits?.name, "large")
        XCTAssertEqual(fits?.reason, .meetsDeadline)
        let down = VariantSelector.select(family(large: 80 * ms, small: 10 * ms), deadlineNanos: 50 * ms, minAccuracy: nil, state: .init(), now: 0)
        XCTAssertEqual(down?.name, "small")
        XCTAssertEqual(down?.reason, .deadline)
        let none = VariantSelector.select(family(large: 80 * ms, small: 60 * ms, tiny: 55 * ms), deadlineNanos: 50 * ms, minAccuracy: nil, state: .init(), now: 0)
        XCTAssertEqual(none?.name, "tiny")
        XCTAssertEqual(none?.reason, .fastest)
    }

    func testMinAccuracyFilters() {
        let c = VariantSelector.select(family(large: 80 * ms, small: 10 * ms), deadlineNanos: 50 * ms, minAccuracy: 0.75, state: .init(), now: 0)
        XCTAssertEqual(c?.name, "large", "min_accuracy excludes the small variant even though only it meets the deadline")
        XCTAssertEqual(c?.reason, .fastest)
        XCTAssertNil(VariantSelector.select(family(large: 1, small: 1), deadlineNanos: nil, minAccuracy: 0.9, state: .init(), now: 0))
    }

    func testUncalibratedVariantsCountAsMeetingTheDeadline() {
        let c = VariantSelector.select(family(large: nil, small: 10 * ms), deadlineNanos: 50 * ms, minAccuracy: nil, state: .init(), now: 0)
        XCTAssertEqual(c?.name, "large")
    }

    func testHysteresisDoesNotFlap() {
        let deadline = 50 * ms
        // Load rises: large is predicted at 60 ms, so small serves.
        var state = VariantSelector.State()
        var c = VariantSelector.select(family(large: 60 * ms, small: 10 * ms), deadlineNanos: deadline, minAccuracy: nil, state: state, now: 0)
        XCTAssertEqual(c?.name, "small")
        state = c!.state
        XCTAssertEqual(state, .init(current: "small", since: 0))
        // Load eases a little: large would fit (45 ms < 50) but without the 30% headroom: stay on small.
        c = VariantSelector.select(family(large: 45 * ms, small: 10 * ms), deadlineNanos: deadline, minAccuracy: nil, state: state, now: 2_000 * ms)
        XCTAssertEqual(c?.name, "small")
        XCTAssertEqual(c?.reason, .deadline)
        state = c!.state
        // Plenty of headroom, but the choice is only 200 ms old: stay.
        let young = VariantSelector.State(current: "small", since: 1_900 * ms)
        c = VariantSelector.select(family(large: 20 * ms, small: 10 * ms), deadlineNanos: deadline, minAccuracy: nil, state: young, now: 2_100 * ms)
        XCTAssertEqual(c?.name, "small")
        // Headroom and held long enough: back to large.
        c = VariantSelector.select(family(large: 30 * ms, small: 10 * ms), deadlineNanos: deadline, minAccuracy: nil, state: state, now: 3_000 * ms)
        XCTAssertEqual(c?.name, "large")
        XCTAssertEqual(c?.reason, .meetsDeadline)
        XCTAssertEqual(c?.state, .init(current: "large", since: 3_000 * ms))
        // A downgrade is never delayed: large now misses, small serves at once.
        let d = VariantSelector.select(family(large: 70 * ms, small: 10 * ms), deadlineNanos: deadline, minAccuracy: nil, state: c!.state, now: 3_001 * ms)
        XCTAssertEqual(d?.name, "small")
    }

    func testNoUpgradeIntoAVariantThatCannotSustainTheArrivalRate() {
        let deadline = 25 * ms
        // Sustained overload: 1650 img/s arrive; large sustains 890/s, small 4000/s. Small serves, and
        // large's queue has drained, so its prediction alone would call it back every second.
        let c = [C(name: "large", accuracy: 0.88, predictedNanos: 3 * ms, capacityPerSecond: 890),
                 C(name: "small", accuracy: 0.77, predictedNanos: 2 * ms, capacityPerSecond: 4000)]
        let held = VariantSelector.State(current: "small", since: 0)
        var choice = VariantSelector.select(c, deadlineNanos: deadline, minAccuracy: nil, state: held, now: 5_000 * ms, arrivalRate: 1650)
        XCTAssertEqual(choice?.name, "small")
        XCTAssertEqual(choice?.reason, .deadline)
        // 70% of 890/s is 623/s: at 700/s it would run too close to its limit; at 250/s it comes back.
        choice = VariantSelector.select(c, deadlineNanos: deadline, minAccuracy: nil, state: held, now: 5_000 * ms, arrivalRate: 700)
        XCTAssertEqual(choice?.name, "small")
        choice = VariantSelector.select(c, deadlineNanos: deadline, minAccuracy: nil, state: held, now: 5_000 * ms, arrivalRate: 250)
        XCTAssertEqual(choice?.name, "large")
        XCTAssertEqual(choice?.reason, .meetsDeadline)
        // The rate is no reason to step down from a variant that still meets the deadline (nor to refuse
        // the first choice): only upgrades are checked.
        let onLarge = VariantSelector.State(current: "large", since: 0)
        XCTAssertEqual(VariantSelector.select(c, deadlineNanos: deadline, minAccuracy: nil, state: onLarge, now: 5_000 * ms, arrivalRate: 1650)?.name, "large")
        XCTAssertEqual(VariantSelector.select(c, deadlineNanos: deadline, minAccuracy: nil, state: .init(), now: 0, arrivalRate: 1650)?.name, "large")
        // Unknown capacity or rate: no check.
        let unknown = [C(name: "large", accuracy: 0.88, predictedNanos: 3 * ms), C(name: "small", accuracy: 0.77, predictedNanos: 2 * ms)]
        XCTAssertEqual(VariantSelector.select(unknown, deadlineNanos: deadline, minAccuracy: nil, state: held, now: 5_000 * ms, arrivalRate: 1650)?.name, "large")
        XCTAssertEqual(VariantSelector.select(c, deadlineNanos: deadline, minAccuracy: nil, state: held, now: 5_000 * ms)?.name, "large")
    }

    func testArrivalRateFollowsStepsAndDecays() {
        var r = ArrivalRate(tauSeconds: 1)
        // 1000 arrivals per second for 5 s (one every millisecond).
        var t: UInt64 = 0
        for _ in 0..<5_000 { r.observe(now: t); t += ms }
        XCTAssertEqual(r.rate(at: t), 1000, accuracy: 10)
        // Then 100 per second: within 3 τ the estimate is close to 100 (within 5% of the step).
        for _ in 0..<300 { r.observe(now: t); t += 10 * ms }
        XCTAssertEqual(r.rate(at: t), 100, accuracy: 0.05 * 900 + 2)
        // Nothing for 10 s: it falls to nearly nothing; images of one call count each.
        XCTAssertLessThan(r.rate(at: t + 10_000 * ms), 0.01)
        var images = ArrivalRate(tauSeconds: 1)
        images.observe(count: 8, now: 0)
        XCTAssertEqual(images.rate(at: 0), 8, accuracy: 1e-9)
        XCTAssertEqual(images.rate(at: 1_000 * ms), 8 / M_E, accuracy: 1e-9)
    }

    func testABSplitIsDeterministicPerClientAndFollowsTheWeights() {
        let router = FamilyRouter()
        let arms = [(variant: "v1", weight: 90), (variant: "v2", weight: 10)]
        for id in ["alice", "bob", "carol"] {
            let first = router.pickArm(arms, clientID: id)
            for _ in 0..<5 { XCTAssertEqual(router.pickArm(arms, clientID: id), first) }
        }
        var v2 = 0
        for i in 0..<10_000 where router.pickArm(arms, clientID: "client-\(i)") == "v2" { v2 += 1 }
        XCTAssertEqual(Double(v2) / 10_000, 0.10, accuracy: 0.02)
        XCTAssertNil(router.pickArm([(variant: "v1", weight: 0)], clientID: nil))
    }
}
