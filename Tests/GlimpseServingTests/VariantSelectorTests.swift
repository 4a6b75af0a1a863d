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
