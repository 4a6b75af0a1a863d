import Foundation
import GlimpseTestSupport
import XCTest

@testable import GlimpseServing

/// The energy meter against a fake powercap directory: package domains, sub-domains, wrap-around,
/// and RAPL that is missing or unreadable.
final class EnergyMeterTests: XCTestCase {
    var root: URL!

    override func setUpWithError() throws {
        root = try temporaryFolder("powercap").url
    }

    func domain(_ name: String, energy: UInt64, range: UInt64) throws {
        let dir = root.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try "\(energy)\n".write(to: dir.appendingPathComponent("energy_uj"), atomically: true, encoding: .utf8)
        try "\(range)\n".write(to: dir.appendingPathComponent("max_energy_range_uj"), atomically: true, encoding: .utf8)
    }

    func setEnergy(_ name: String, _ energy: UInt64) throws {
        try "\(energy)\n".write(to: root.appendingPathComponent(name).appendingPathComponent("energy_uj"), atomically: true, encoding: .utf8)
    }

    func testWrappingCounterHandlesWrapAround() {
        var c = WrappingCounter(range: 1_000)
        c.update(raw: 900)
        c.update(raw: 950)
        XCTAssertEqual(c.totalMicrojoules, 50)
        c.update(raw: 30)  // wrapped: 50 to the top, then 30
        XCTAssertEqual(c.totalMicrojoules, 130)
        c.update(raw: 30)
        XCTAssertEqual(c.totalMicrojoules, 130)
    }

    func testSumsPackageDomainsOnlyAndSurvivesWrap() throws {
        try domain("intel-rapl:0", energy: 999_000_000, range: 1_000_000_000)
        try domain("intel-rapl:1", energy: 5_000_000, range: 1_000_000_000)
        try domain("intel-rapl:0:0", energy: 1, range: 1_000_000_000)  // a core sub-domain: not counted again
        let meter = EnergyMeter(powercapRoot: root.path, wattsPerCore: 4)
        XCTAssertEqual(meter.source, .rapl)
        XCTAssertEqual(meter.totalJoules(), 0, accuracy: 1e-9)
        try setEnergy("intel-rapl:0", 2_000_000)      // wrapped: +1 J to the top, +2 J after
        try setEnergy("intel-rapl:1", 6_500_000)      // +1.5 J
        try setEnergy("intel-rapl:0:0", 900_000_000)  // ignored
        XCTAssertEqual(meter.totalJoules(), 4.5, accuracy: 1e-9)
    }

    func testMissingRAPLFallsBackToTheEstimate() {
        let meter = EnergyMeter(powercapRoot: root.appendingPathComponent("nope").path, wattsPerCore: 5)
        XCTAssertEqual(meter.source, .estimate)
        XCTAssertEqual(meter.joules(cpuNanos: 2_000_000_000), 10, accuracy: 1e-9)
    }

    func testUnreadableRAPLFallsBackToTheEstimate() throws {
        try domain("intel-rapl:0", energy: 1, range: 1_000)
        let file = root.appendingPathComponent("intel-rapl:0/energy_uj").path
        // As root, permissions do not stop reads; a directory in place of the file does.
        try FileManager.default.removeItem(atPath: file)
        try FileManager.default.createDirectory(atPath: file, withIntermediateDirectories: true)
        let meter = EnergyMeter(powercapRoot: root.path, wattsPerCore: 4)
        XCTAssertEqual(meter.source, .estimate)
    }

    func testEstimateGrowsWithProcessCPUTime() {
        let meter = EnergyMeter(powercapRoot: root.path, wattsPerCore: 4)
        let before = meter.totalJoules()
        var x = 0.0
        let end = Date().addingTimeInterval(0.05)
        while Date() < end { x += sin(x + 1) }
        XCTAssertGreaterThan(meter.totalJoules(), before, "\(x)")
    }
}
