import Foundation

/// A model's execution plans not in use, by batch size, and when each size last ran.
///
/// A plan holds its batch's activation buffers and scratch, which grow with the batch. Under a burst
/// the batching queue may form a batch size once that it rarely forms again; kept for the model's
/// life, such a plan holds its buffers for nothing. So the plans of a size that has not run for
/// `idleNanos` are freed, checked at most once per `sweepNanos` when a plan is put back. Batch 1's plans stay: single requests and
/// split batches use them. Plans in use are not here; they come back when their run ends.
///
/// It also keeps the plans of at most `maxSizes` batch sizes other than 1 (one by default), freeing the
/// least recently run size when another is put back. Under overload the scheduler may form many sizes
/// in turn, each run often enough to stay. Measured with cifar10-large under heaptrack (1,000 req/s, a
/// reload every 30 s): one version's cached plans grew from 5.5 MB to 22.7–28.0 MB (8–16 plans) while
/// RSS stood 20–23 MiB over its level, the plateaus of the soak; with three sizes kept, a 6-minute
/// soak still saw sizes 5, 6 and 8 cached at once (15.7 MB of plans, RSS +17 MiB). Onnxruntime's
/// arena likewise holds about one run's buffers at the largest batch. A size freed this way plans again
/// when next formed: 0.2–1.4 ms for cifar10-large (a batch of 8 runs 13 ms), 5–18 ms for
/// mobilenetv2-12-int8 (30 ms). Under steady overload batches are full, so one size is run.
struct PlanCache<Plan> {
    var idleNanos: UInt64
    var maxSizes: Int = 1
    var sweepNanos: UInt64 = 1_000_000_000
    private var free: [Int: [Plan]] = [:]
    private var lastUse: [Int: UInt64] = [:]
    private var lastSweep: UInt64 = 0

    init(idleNanos: UInt64) {
        self.idleNanos = idleNanos
    }

    mutating func take(batch: Int) -> Plan? {
        free[batch]?.popLast()
    }

    /// Puts plans of `batch` back after a run at `now` (nanoseconds of a monotonic clock), and frees the
    /// plans of other sizes idle for `idleNanos` once a sweep is due.
    mutating func put(_ plans: [Plan], batch: Int, now: UInt64) {
        free[batch, default: []].append(contentsOf: plans)
        lastUse[batch] = max(lastUse[batch] ?? 0, now)
        // Only a size other than 1 put back can take the count over (no array built for batch 1's runs).
        var held = batch == 1 ? [] : free.keys.filter { $0 != 1 && free[$0]?.isEmpty == false }
        while held.count > maxSizes,
              let oldest = held.filter({ $0 != batch }).min(by: { (lastUse[$0] ?? 0) < (lastUse[$1] ?? 0) }) {
            free[oldest] = nil
            lastUse[oldest] = nil
            held.removeAll { $0 == oldest }
        }
        guard now &- lastSweep >= sweepNanos else { return }
        lastSweep = now
        for (size, used) in lastUse where size != 1 && now &- used >= idleNanos {
            free[size] = nil
            lastUse[size] = nil
        }
    }

    /// Frees the plans of every size not in `keeping`.
    mutating func release(keeping: Set<Int>) {
        for size in Array(free.keys) where !keeping.contains(size) {
            free[size] = nil
            lastUse[size] = nil
        }
    }

    var count: Int { free.values.reduce(0) { $0 + $1.count } }

    /// Plans cached per batch size (sizes with none left out).
    var countsBySize: [Int: Int] { free.filter { !$0.value.isEmpty }.mapValues(\.count) }

}

enum PlanClock {
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
