@testable import GlimpseServing
import XCTest

/// The load split as a pure function: made-up capacities and predictions, arrivals on a fake clock.
final class VariantSplitTests: XCTestCase {
    typealias V = VariantSplit.Variant
    let ms: UInt64 = 1_000_000
    let second: UInt64 = 1_000_000_000
    /// The cifar10 variants' capacities and accuracies (BENCHMARKS.md, embedded models).
    let muL = 662.0, muS = 4814.0

    func family(large: UInt64? = nil, small: UInt64? = nil) -> [V] {
        [V(name: "small", accuracy: 0.773, capacityPerSecond: muS, predictedNanos: small),
         V(name: "large", accuracy: 0.884, capacityPerSecond: muL, predictedNanos: large)]
    }

    /// The closed form: the large variant's share that keeps the shared cores just saturated.
    func closedForm(_ lambda: Double) -> Double {
        min(1, max(0, (1 / lambda - 1 / muS) / (1 / muL - 1 / muS)))
    }

    func policy(margin: Double = 0) -> VariantSplit.Policy {
        var p = VariantSplit.Policy()
        p.margin = margin
        return p
    }

    func testSharesMatchTheClosedFormAtMultiplesOfTheLargeCapacity() {
        for factor in [0.5, 1, 1.5, 2, 4] {
            let lambda = factor * muL
            let s = VariantSplit.shares(family(), arrivalRate: lambda, margin: 0)
            XCTAssertEqual(s.map(\.name), ["large", "small"], "most accurate first")
            XCTAssertEqual(s[0].share, closedForm(lambda), accuracy: 1e-12, "\(factor)×")
            XCTAssertEqual(s[1].share, 1 - closedForm(lambda), accuracy: 1e-12, "\(factor)×")
            // The margin plans the cores as if the arrivals were λ/(1 − margin).
            let m = VariantSplit.shares(family(), arrivalRate: lambda, margin: 0.1)
            XCTAssertEqual(m[0].share, closedForm(lambda / 0.9), accuracy: 1e-12, "\(factor)× with the margin")
            // A negative margin (the experiments' knob) plans beyond the estimate: λ/1.1; −0.9 stops at −0.5.
            let beyond = VariantSplit.shares(family(), arrivalRate: lambda, margin: -0.1)
            XCTAssertEqual(beyond[0].share, closedForm(lambda / 1.1), accuracy: 1e-12, "\(factor)× with margin −0.1")
            let floor = VariantSplit.shares(family(), arrivalRate: lambda, margin: -0.9)
            XCTAssertEqual(floor[0].share, closedForm(lambda / 1.5), accuracy: 1e-12, "\(factor)× with margin −0.9")
        }
        XCTAssertEqual(closedForm(0.5 * muL), 1)
        XCTAssertEqual(closedForm(muL), 1)
        XCTAssertEqual(closedForm(2 * muL), 0.42, accuracy: 0.01, "about 42% of the requests on the large variant at 2×")
        XCTAssertEqual(VariantSplit.shares(family(), arrivalRate: muL, margin: 0.1)[0].share, closedForm(muL / 0.9), accuracy: 1e-12)
        XCTAssertLessThan(VariantSplit.shares(family(), arrivalRate: muL, margin: 0.1)[0].share, 1, "at 1× the margin sends a little to the small variant")
    }

    /// Arrivals at a constant rate on a fake clock feed the arrival-rate estimate; after it settles the
    /// split and the realized share of each variant follow the closed form at each load.
    func testTheRealizedSplitTracksTheClosedFormUnderSteadyLoad() {
        for factor in [0.5, 1, 1.5, 2, 4] {
            let lambda = factor * muL
            let gap = UInt64(1e9 / lambda)
            var rate = ArrivalRate()
            var state = VariantSplit.State()
            var now: UInt64 = 0
            var served: [String: Int] = [:]
            let total = Int(lambda * 8)  // 8 s; the last 3 s are counted
            for i in 0..<total {
                now += gap
                rate.observe(count: 1, now: now)
                let c = VariantSplit.select(family(), arrivalRate: rate.rate(at: now), deadlineNanos: nil, minAccuracy: nil, clientID: nil,
                                            state: state, now: now, policy: policy())!
                state = c.state
                if i >= total - Int(lambda * 3) { served[c.name, default: 0] += 1 }
                XCTAssertEqual(c.reason, c.name == "large" ? .mostAccurate : .overflow)
            }
            let counted = Double(served.values.reduce(0, +))
            let realized = Double(served["large", default: 0]) / counted
            // The split follows the estimate within the hysteresis band; the assignment follows the split.
            XCTAssertEqual(state.share(of: "large"), closedForm(lambda), accuracy: 0.03, "\(factor)×")
            XCTAssertEqual(realized, state.share(of: "large"), accuracy: 0.03, "\(factor)×: \(served)")
        }
    }

    func testTheAssignmentFollowsTheSplitWithinOneRequest() {
        var state = VariantSplit.State(shares: [.init(name: "large", share: 0.37), .init(name: "small", share: 0.63)], since: 0)
        var large = 0
        for n in 1...1000 {
            // An arrival rate whose split is within the band of 0.37 keeps the split in force.
            let c = VariantSplit.select(family(), arrivalRate: 2.1 * muL, deadlineNanos: nil, minAccuracy: nil, clientID: nil,
                                        state: state, now: UInt64(n) * ms, policy: policy())!
            state = c.state
            if c.name == "large" { large += 1 }
            XCTAssertEqual(Double(large), 0.37 * Double(n), accuracy: 1.0, "after \(n) requests")
        }
        XCTAssertEqual(state.share(of: "large"), 0.37)
    }

    func testAClientStaysOnOneVariantAndClientsSplitByTheShares() {
        let state = VariantSplit.State(shares: [.init(name: "large", share: 0.4), .init(name: "small", share: 0.6)], since: 0)
        var large = 0
        for i in 0..<10_000 {
            let id = "client-\(i)"
            let first = VariantSplit.select(family(), arrivalRate: 2 * muL, deadlineNanos: nil, minAccuracy: nil, clientID: id,
                                            state: state, now: 10, policy: policy())!
            let again = VariantSplit.select(family(), arrivalRate: 2 * muL, deadlineNanos: nil, minAccuracy: nil, clientID: id,
                                            state: first.state, now: 20, policy: policy())!
            XCTAssertEqual(first.name, again.name, id)
            if first.name == "large" { large += 1 }
        }
        XCTAssertEqual(Double(large) / 10_000, 0.4, accuracy: 0.02)
    }

    func testHysteresis() {
        let p = policy()
        var state = VariantSplit.adopt(VariantSplit.shares(family(), arrivalRate: 2 * muL, margin: 0), state: .init(), now: 0, policy: p)
        let atTwo = state.share(of: "large")
        // A small wobble of the arrival rate leaves the split alone.
        state = VariantSplit.adopt(VariantSplit.shares(family(), arrivalRate: 2.02 * muL, margin: 0), state: state, now: 5 * second, policy: p)
        XCTAssertEqual(state.share(of: "large"), atTwo)
        // More load: less for the large variant, at once.
        state = VariantSplit.adopt(VariantSplit.shares(family(), arrivalRate: 3 * muL, margin: 0), state: state, now: 5 * second + ms, policy: p)
        XCTAssertEqual(state.share(of: "large"), closedForm(3 * muL), accuracy: 1e-12)
        XCTAssertEqual(state.since, 5 * second + ms)
        // Less load: more for the large variant only once the split has held for minHoldNanos.
        let early = VariantSplit.adopt(VariantSplit.shares(family(), arrivalRate: 0.3 * muL, margin: 0), state: state, now: 5 * second + 500 * ms, policy: p)
        XCTAssertEqual(early, state)
        state = VariantSplit.adopt(VariantSplit.shares(family(), arrivalRate: 0.3 * muL, margin: 0), state: state, now: 6 * second + ms, policy: p)
        XCTAssertEqual(state.share(of: "large"), 1)
        // Back to the large variant alone even from within the band.
        var near = VariantSplit.State(shares: [.init(name: "large", share: 0.99), .init(name: "small", share: 0.01)], since: 0)
        near = VariantSplit.adopt(VariantSplit.shares(family(), arrivalRate: 0.5 * muL, margin: 0), state: near, now: 2 * second, policy: p)
        XCTAssertEqual(near.share(of: "large"), 1)
    }

    /// A load that drops from 2× to 0.3× the large capacity: within 3 s the large variant takes it all.
    func testAfterTheLoadDropsTheLargeVariantServesAgainWithinThreeSeconds() {
        var rate = ArrivalRate()
        var state = VariantSplit.State()
        var now: UInt64 = 0
        func run(_ lambda: Double, seconds: Double, _ each: (VariantSplit.Choice) -> Void) {
            let gap = UInt64(1e9 / lambda)
            for _ in 0..<Int(lambda * seconds) {
                now += gap
                rate.observe(count: 1, now: now)
                let c = VariantSplit.select(family(), arrivalRate: rate.rate(at: now), deadlineNanos: nil, minAccuracy: nil, clientID: nil,
                                            state: state, now: now, policy: .init())!
                state = c.state
                each(c)
            }
        }
        run(2 * muL, seconds: 10) { _ in }
        XCTAssertLessThan(state.share(of: "large"), 0.5)
        run(0.3 * muL, seconds: 3) { _ in }
        XCTAssertEqual(state.share(of: "large"), 1)
        var small = 0
        run(0.3 * muL, seconds: 5) { if $0.name == "small" { small += 1 } }
        XCTAssertEqual(small, 0)
    }

    func testMinAccuracyServesTheCheapestVariantMeetingIt() {
        let state = VariantSplit.State(shares: [.init(name: "large", share: 0.5), .init(name: "small", share: 0.5)], since: 0)
        var reasons: [VariantSplit.Reason: Int] = [:]
        var s = state
        for n in 0..<10 {
            let c = VariantSplit.select(family(), arrivalRate: 1.8 * muL, deadlineNanos: nil, minAccuracy: 0.8, clientID: nil,
                                        state: s, now: UInt64(n), policy: policy())!
            s = c.state
            XCTAssertEqual(c.name, "large")
            reasons[c.reason, default: 0] += 1
        }
        XCTAssertEqual(reasons, [.mostAccurate: 5, .minAccuracy: 5], "the requests the split gave the small variant say why they did not go there")
        XCTAssertNil(VariantSplit.select(family(), arrivalRate: nil, deadlineNanos: nil, minAccuracy: 0.9, clientID: nil, state: state, now: 0))
        // A min_accuracy every variant meets changes nothing.
        let c = VariantSplit.select(family(), arrivalRate: nil, deadlineNanos: nil, minAccuracy: 0.5, clientID: nil, state: .init(), now: 0)
        XCTAssertEqual(c?.name, "large")
        XCTAssertEqual(c?.reason, .mostAccurate)
    }

    func testEachRequestIsCheckedAgainstItsDeadline() {
        var p = policy()
        p.deadlineShare = 0.7
        let allLarge = VariantSplit.State(shares: [.init(name: "large", share: 1), .init(name: "small", share: 0)], since: 0)
        // The large variant's share, but it is predicted to take 30 ms of a 40 ms deadline (> 70%).
        let late = VariantSplit.select(family(large: 30 * ms, small: 2 * ms), arrivalRate: 100, deadlineNanos: 40 * ms, minAccuracy: nil,
                                       clientID: nil, state: allLarge, now: 0, policy: p)
        XCTAssertEqual(late?.name, "small")
        XCTAssertEqual(late?.reason, .deadline)
        let inTime = VariantSplit.select(family(large: 20 * ms, small: 2 * ms), arrivalRate: 100, deadlineNanos: 40 * ms, minAccuracy: nil,
                                         clientID: nil, state: allLarge, now: 0, policy: p)
        XCTAssertEqual(inTime?.name, "large")
        XCTAssertEqual(inTime?.reason, .mostAccurate)
        // Nothing fits: the fastest.
        let none = VariantSplit.select(family(large: 90 * ms, small: 50 * ms), arrivalRate: 100, deadlineNanos: 40 * ms, minAccuracy: nil,
                                       clientID: nil, state: allLarge, now: 0, policy: p)
        XCTAssertEqual(none?.name, "small")
        XCTAssertEqual(none?.reason, .fastest)
        // The variant the split gave and every lighter one miss the deadline: the fastest, whichever it is.
        let allSmall = VariantSplit.State(shares: [.init(name: "large", share: 0), .init(name: "small", share: 1)], since: 0)
        let up = VariantSplit.select(family(large: 1 * ms, small: 35 * ms), arrivalRate: 100 * muL, deadlineNanos: 40 * ms, minAccuracy: nil,
                                     clientID: nil, state: allSmall, now: 0, policy: p)
        XCTAssertEqual(up?.name, "large")
        XCTAssertEqual(up?.reason, .fastest)
        // With min_accuracy, only variants meeting it are tried.
        let strict = VariantSplit.select(family(large: 30 * ms, small: 2 * ms), arrivalRate: 100, deadlineNanos: 40 * ms, minAccuracy: 0.8,
                                         clientID: nil, state: allLarge, now: 0, policy: p)
        XCTAssertEqual(strict?.name, "large")
        XCTAssertEqual(strict?.reason, .fastest)
    }

    func testMoreThanTwoVariantsFillFromTheMostAccurateDown() {
        let three = [V(name: "large", accuracy: 0.9, capacityPerSecond: 100), V(name: "medium", accuracy: 0.8, capacityPerSecond: 400),
                     V(name: "small", accuracy: 0.7, capacityPerSecond: 1000),
                     // Less accurate than medium and no cheaper: never given a share.
                     V(name: "slow", accuracy: 0.75, capacityPerSecond: 300)]
        func share(_ lambda: Double) -> [String: Double] {
            Dictionary(uniqueKeysWithValues: VariantSplit.shares(three, arrivalRate: lambda, margin: 0).map { ($0.name, $0.share) })
        }
        XCTAssertEqual(share(80), ["large": 1, "medium": 0, "slow": 0, "small": 0])
        // Between the large and medium capacities: large and medium share.
        let f = (1 / 200.0 - 1 / 400.0) / (1 / 100.0 - 1 / 400.0)
        XCTAssertEqual(share(200)["large"]!, f, accuracy: 1e-12)
        XCTAssertEqual(share(200)["medium"]!, 1 - f, accuracy: 1e-12)
        XCTAssertEqual(share(200)["small"], 0)
        // Beyond the medium one's: medium and small share.
        let g = (1 / 500.0 - 1 / 1000.0) / (1 / 400.0 - 1 / 1000.0)
        XCTAssertEqual(share(500)["large"], 0)
        XCTAssertEqual(share(500)["medium"]!, g, accuracy: 1e-12)
        XCTAssertEqual(share(500)["small"]!, 1 - g, accuracy: 1e-12)
        XCTAssertEqual(share(5000)["small"], 1)
    }

    func testUnknownLoadOrCapacityGivesTheMostAccurateEverything() {
        XCTAssertEqual(VariantSplit.shares(family(), arrivalRate: nil, margin: 0.1).first, .init(name: "large", share: 1))
        let uncalibrated = [V(name: "large", accuracy: 0.9, capacityPerSecond: nil), V(name: "small", accuracy: 0.7, capacityPerSecond: 1000)]
        XCTAssertEqual(VariantSplit.shares(uncalibrated, arrivalRate: 5000, margin: 0.1).first, .init(name: "large", share: 1))
        XCTAssertEqual(VariantSplit.shares([], arrivalRate: 10, margin: 0), [])
    }
}
