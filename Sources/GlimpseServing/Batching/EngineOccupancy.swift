import Synchronization

/// The batches running now across every model of one service, and how often batches have lately
/// overlapped.
///
/// The models share the machine's cores, so a batch may spread over all of its engine's threads only
/// when no other batch, of any model, is running: with two variants of a family serving side by side,
/// a light variant's lone batch would otherwise wake its engine's helper threads onto cores the other
/// variant's workers are using, and pay the wake-ups and the spinning for nothing.
///
/// Nor when batches have lately overlapped: when more than `maxOverlap` of the recent batches began
/// while another was running. Spreading one batch over the threads buys latency with CPU (the helper
/// threads are woken, spin between operators and sleep again, for every batch). With requests one
/// after another (one client, or a light load) the other core is idle and that CPU is free. Under an
/// open-loop load that keeps the cores half busy, a batch is often alone for a moment, but the next
/// request arrives while it runs and needs that core: cifar10-large at 600 requests/s on 2 cores cost
/// about 2,160 µs of CPU per request with its lone batches on both threads, 1,760 on one
/// (BENCHMARKS.md, "Lone batches").
final class EngineOccupancy: Sendable {
    private let running = Atomic<Int>(0)
    /// Largest share of recent batches that began beside another for a lone batch to use all engine
    /// threads; 1 or more: always, 0: never.
    let maxOverlap: Double
    /// Weight of each new batch in the recent share (an exponential average over about 16 batches).
    static let weight = 1.0 / 16
    private let overlap = Mutex<Double>(0)

    init(maxOverlap: Double = 1) {
        self.maxOverlap = maxOverlap
    }

    /// Counts a batch as started and returns how many others were running when it did.
    func begin() -> Int {
        let others = running.add(1, ordering: .relaxed).oldValue
        let beside = others > 0 ? 1.0 : 0.0
        overlap.withLock { $0 += Self.weight * (beside - $0) }
        return others
    }

    /// Counts a batch as finished.
    func end() { running.subtract(1, ordering: .relaxed) }

    /// Batches running now.
    var count: Int { running.load(ordering: .relaxed) }

    /// Share of the recent batches that began while another was running.
    var recentOverlap: Double { overlap.withLock { $0 } }

    /// Whether batches have overlapped rarely enough lately for a lone one to use all threads.
    func overlapsRarely() -> Bool {
        if maxOverlap >= 1 { return true }
        return recentOverlap < maxOverlap
    }
}
