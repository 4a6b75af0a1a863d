import Foundation
import Metrics

/// Samples process-wide values (RSS, CPU time, energy, power) into metrics, e.g. before each scrape.
public final class ProcessSampler: @unchecked Sendable {
    private let energy: EnergyMeter
    private let lock = NSLock()
    private var lastCPU: UInt64 = 0
    private var lastJoules: Double = 0
    private let metrics: MetricHandles

    /// `metrics` defaults to the backend `MetricsSystem` was bootstrapped with, else none.
    public init(energy: EnergyMeter, metrics: MetricHandles = MetricHandles(factory: MetricsSystem.factory)) {
        self.energy = energy
        self.metrics = metrics
    }

    public func sample() {
        lock.lock()
        defer { lock.unlock() }
        let source = energy.source.rawValue
        if let rss = ProcessSampler.residentBytes() {
            metrics.gauge(GlimpseMetrics.residentBytes, []).record(rss)
        }
        let cpu = CPUClock.process()
        if cpu > lastCPU {
            metrics.floatingPointCounter(GlimpseMetrics.cpuSeconds, []).increment(by: Double(cpu - lastCPU) / 1e9)
            lastCPU = cpu
        }
        let (joules, watts) = energy.sample()
        if joules > lastJoules {
            metrics.floatingPointCounter(GlimpseMetrics.energyJoules, [("source", source)]).increment(by: joules - lastJoules)
            lastJoules = joules
        }
        metrics.gauge(GlimpseMetrics.powerWatts, [("source", source)]).record(watts)
        metrics.gauge(GlimpseMetrics.wattsPerCore, [("source", source)]).record(energy.wattsPerCore)
    }

    /// Resident set size from /proc/self/statm.
    public static func residentBytes() -> Int? {
        guard let data = FileManager.default.contents(atPath: "/proc/self/statm") else { return nil }
        let fields = String(decoding: data, as: UTF8.self).split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
