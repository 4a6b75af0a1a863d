import Foundation

/// Energy accounting: RAPL package energy where the kernel exposes it, otherwise an estimate from CPU
/// time × a per-core power figure.
///
/// Per-inference energy is always CPU time × watts per busy core: the batch's CPU time is measured on
/// the threads that ran it and split evenly across its items. With RAPL, watts per busy core is
/// calibrated from RAPL (package joules ÷ process CPU seconds over the last minute or more of
/// activity); without RAPL it is the configured figure (`--watts-per-core`, default 4 W: a Zen 4 EPYC
/// package's TDP divided by its cores, rounded).
public final class EnergyMeter: @unchecked Sendable {
    public enum Source: String, Sendable {
        case rapl
        case estimate
    }

    public let source: Source
    public let configuredWattsPerCore: Double
    private let rapl: RAPLReader?
    private let lock = NSLock()
    private let startCPU: UInt64
    private var lastSample: (time: UInt64, joules: Double, cpu: UInt64)
    private var calibratedWattsPerCore: Double?
    private var lastPower: Double = 0

    public init(powercapRoot: String = "/sys/class/powercap", wattsPerCore: Double = 4.0) {
        rapl = RAPLReader(root: powercapRoot)
        source = rapl == nil ? .estimate : .rapl
        configuredWattsPerCore = wattsPerCore
        startCPU = CPUClock.process()
        lastSample = (DispatchTime.now().uptimeNanoseconds, 0, startCPU)
    }

    /// Watts attributed to one fully busy core.
    public var wattsPerCore: Double {
        lock.lock()
        defer { lock.unlock() }
        return calibratedWattsPerCore ?? configuredWattsPerCore
    }

    /// Joules for `cpuNanos` of CPU work.
    public func joules(cpuNanos: UInt64) -> Double {
        Double(cpuNanos) / 1e9 * wattsPerCore
    }

    /// Total joules so far: RAPL package energy, or process CPU seconds × watts per core.
    public func totalJoules() -> Double {
        if let rapl { return rapl.joules() }
        return Double(CPUClock.process() - startCPU) / 1e9 * configuredWattsPerCore
    }

    /// Samples the counters: returns total joules and the mean power since the previous sample
    /// (at least one second apart; otherwise the previous power is returned). With RAPL it also
    /// recalibrates watts per busy core.
    public func sample() -> (joules: Double, watts: Double) {
        let now = DispatchTime.now().uptimeNanoseconds
        let joules = totalJoules()
        let cpu = CPUClock.process()
        lock.lock()
        defer { lock.unlock() }
        let dt = Double(now - lastSample.time) / 1e9
        if dt >= 1 {
            let dj = joules - lastSample.joules
            lastPower = max(0, dj / dt)
            let dcpu = Double(cpu - lastSample.cpu) / 1e9
            if rapl != nil && dcpu > 0.5 {
                // Whole-package joules per busy core-second, smoothed.
                let w = dj / dcpu
                calibratedWattsPerCore = calibratedWattsPerCore.map { $0 * 0.8 + w * 0.2 } ?? w
            }
            lastSample = (now, joules, cpu)
        }
        return (joules, lastPower)
    }
}
