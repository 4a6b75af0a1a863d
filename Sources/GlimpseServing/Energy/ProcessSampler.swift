import Foundation
import Metrics

/// Samples process-wide values (RSS, CPU time, energy, power) into metrics, e.g. before each scrape.
public final class ProcessSampler: @unchecked Sendable {
    private let energy: EnergyMeter
    private let lock = NSLock()
    private var lastCPU: UInt64 = 0
    private var lastJoules: Double = 0

    public init(energy: EnergyMeter) {
        self.energy = energy
    }

    public func sample() {
        lock.lock()
        defer { lock.unlock() }
        let source = energy.source.rawValue
        if let rss = ProcessSampler.residentBytes() {
            Gauge(label: GlimpseMetrics.residentBytes).record(rss)
        }
        let cpu = CPUClock.process()
        if cpu > lastCPU {
            FloatingPointCounter(label: GlimpseMetrics.cpuSeconds).increment(by: Double(cpu - lastCPU) / 1e9)
            lastCPU = cpu
        }
        let (joules, watts) = energy.sample()
        if joules > lastJoules {
            FloatingPointCounter(label: GlimpseMetrics.energyJoules, dimensions: [("source", source)]).increment(by: joules - lastJoules)
            lastJoules = joules
        }
        Gauge(label: GlimpseMetrics.powerWatts, dimensions: [("source", source)]).record(watts)
        Gauge(label: GlimpseMetrics.wattsPerCore, dimensions: [("source", source)]).record(energy.wattsPerCore)
    }

    /// Resident set size from /proc/self/statm.
    public static func residentBytes() -> Int? {
        guard let data = FileManager.default.contents(atPath: "/proc/self/statm") else { return nil }
        let fields = String(decoding: data, as: UTF8.self).split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
