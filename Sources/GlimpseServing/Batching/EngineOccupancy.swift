import Synchronization

/// The batches running now across every model of one service. The models share the machine's cores,
/// so a batch may spread over all of its engine's threads only when no other batch, of any model, is
/// running: with two variants of a family serving side by side, a light variant's lone batch would
/// otherwise wake its engine's helper threads onto cores the other variant's workers are using, and
/// pay the wake-ups and the spinning for nothing.
final class EngineOccupancy: Sendable {
    private let running = Atomic<Int>(0)

    init() {}

    /// Counts a batch as started and returns how many others were running when it did.
    func begin() -> Int { running.add(1, ordering: .relaxed).oldValue }

    /// Counts a batch as finished.
    func end() { running.subtract(1, ordering: .relaxed) }

    /// Batches running now.
    var count: Int { running.load(ordering: .relaxed) }
}
