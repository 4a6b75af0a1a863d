import Foundation
import Synchronization

/// The batches running now across every model of one service, and how busy the process has been.
///
/// The models share the machine's cores, so a batch may spread over all of its engine's threads only
/// when no other batch, of any model, is running: with two variants of a family serving side by side,
/// a light variant's lone batch would otherwise wake its engine's helper threads onto cores the other
/// variant's workers are using, and pay the wake-ups and the spinning for nothing.
///
/// Nor when the process has lately kept more than `maxLoad` of the cores busy. Spreading one batch
/// over the threads buys latency with CPU: the helper threads are woken, spin between operators and
/// sleep again, for every batch. Under open-loop load a batch is often alone for a moment while
/// requests keep arriving, and those costs then come out of throughput. Measured on 2 cores with one
/// request at a time arriving at a steady rate (BENCHMARKS.md, "Lone batches"): cifar10-large at
/// 600/s paid about 300 µs more CPU per request on both threads than on one. With the cores mostly
/// idle the helper finds a free core and the lower latency is worth it.
final class EngineOccupancy: Sendable {
    private let running = Atomic<Int>(0)
    /// Largest share of the cores the process may have used over the last window for a lone batch to
    /// use all engine threads; 1 or more: always, 0: never.
    let maxLoad: Double
    private let cores: Double
    private let windowNanos: UInt64
    private let clock: @Sendable () -> UInt64
    private let cpu: @Sendable () -> UInt64
    private let window: Mutex<LoadWindow>

    private struct LoadWindow {
        var start: UInt64
        var cpuAtStart: UInt64
        /// Share of the cores used over the last complete window.
        var load: Double
    }

    /// `clock` and `cpu` read monotonic time and the process's CPU time (both nanoseconds); tests
    /// pass fakes.
    init(maxLoad: Double = 1, cores: Int = ProcessInfo.processInfo.activeProcessorCount, windowNanos: UInt64 = 20_000_000,
         clock: @escaping @Sendable () -> UInt64 = monotonicNanos, cpu: @escaping @Sendable () -> UInt64 = CPUClock.process) {
        self.maxLoad = maxLoad
        self.cores = Double(max(1, cores))
        self.windowNanos = max(1, windowNanos)
        self.clock = clock
        self.cpu = cpu
        self.window = Mutex(LoadWindow(start: clock(), cpuAtStart: maxLoad > 0 && maxLoad < 1 ? cpu() : 0, load: 0))
    }

    /// Counts a batch as started and returns how many others were running when it did.
    func begin() -> Int { running.add(1, ordering: .relaxed).oldValue }

    /// Counts a batch as finished.
    func end() { running.subtract(1, ordering: .relaxed) }

    /// Batches running now.
    var count: Int { running.load(ordering: .relaxed) }

    /// Whether the process used less than `maxLoad` of the cores over the last complete window (the
    /// window closes at the first call after `windowNanos`; the process's CPU clock is read only then).
    func hasSpareCores() -> Bool {
        if maxLoad >= 1 { return true }
        if maxLoad <= 0 { return false }
        let now = clock()
        return window.withLock { w in
            let elapsed = now &- w.start
            if now > w.start, elapsed >= windowNanos {
                let used = cpu()
                w.load = Double(used &- w.cpuAtStart) / (Double(elapsed) * cores)
                w.start = now
                w.cpuAtStart = used
            }
            return w.load < maxLoad
        }
    }
}
