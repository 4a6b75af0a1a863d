import Foundation

/// A model's execution plans not in use, by batch size, and when each size last ran.
///
/// A plan holds its batch's activation buffers and scratch, which grow with the batch. Under a burst
/// the batching queue may form a batch size once that it rarely forms again; kept for the model's
/// life, such a plan holds its buffers for nothing. So the plans of a size that has not run for
/// `idleNanos` are freed, checked at
/// most once per `sweepNanos` when a plan is put back. Batch 1's plans stay: single requests and
/// split batches use them. Plans in use are not here; they come back when their run ends.
struct PlanCache<Plan> {
    var idleNanos: UInt64
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

}

enum PlanClock {
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
