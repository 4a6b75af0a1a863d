import Foundation
import Synchronization

/// The engine's own compute threads: `threads - 1` workers plus the calling thread.
///
/// `parallelFor` and `parallelTasks` give each thread a contiguous share of the indices (thread t
/// the t-th share, so consecutive operators that split their work alike find their data in that
/// core's cache) and let a thread that runs out take the last indices of another's share. A worker
/// that joins late (still waking up, or descheduled) thus simply runs fewer of them. Workers spin
/// briefly after each job (so the ~50 parallel regions of one inference do not each pay a futex
/// wake-up) and then sleep. The caller never waits for a worker that has not joined the job yet:
/// when the caller has taken the last index it closes the job and waits only for workers still
/// running an index, so a worker that is descheduled (machine oversubscribed) or still waking up
/// costs nothing. If another caller is already using the pool, the call runs serially on its own
/// thread instead of waiting, so concurrent `run` calls never block each other.
public final class ThreadPool: @unchecked Sendable {
    public let threads: Int
    private let state: PoolState

    public static let serial = ThreadPool(threads: 1)

    public init(threads: Int) {
        self.threads = max(1, threads)
        self.state = PoolState(threads: self.threads)
        for i in 1..<self.threads {
            let state = self.state
            let t = Thread {
                nameCurrentThread("glimpse-eng-\(i)")
                state.registerCurrentThreadClock()
                state.workerLoop(thread: i)
            }
            t.name = "glimpse-engine-\(i)"
            t.stackSize = 1 << 20
            t.start()
        }
    }

    deinit { state.stop() }

    /// CPU time used so far by the pool's worker threads (not the calling thread), in nanoseconds.
    public func workerCPUTimeNanos() -> UInt64 { state.workerCPUTimeNanos() }

    /// Runs `body(i)` for every i in 0..<count, spread over the pool's threads.
    public func parallelFor(_ count: Int, _ body: (Int) -> Void) {
        state.parallelFor(count, serial: threads == 1) { i, _ in body(i) }
    }

    /// How many tasks to split work into where `wanted` would suit all threads: one on a one-thread
    /// pool (a batch run serially), where more tasks only repeat each task's set-up.
    public func taskCount(_ wanted: Int) -> Int { threads == 1 ? 1 : wanted }

    /// Runs `body(task, thread)` for every task in 0..<count. `thread` (in 0..<threads) names the
    /// thread running the task, for per-thread scratch; no two tasks run on one thread at once.
    /// Split work into several tasks per thread, in an order where neighbouring tasks touch
    /// neighbouring data: the threads then finish together even when one starts late.
    public func parallelTasks(_ count: Int, _ body: (_ task: Int, _ thread: Int) -> Void) {
        state.parallelFor(count, serial: threads == 1, body)
    }
}

/// Shared between the pool and its worker threads (which keep it alive until they exit).
final class PoolState: @unchecked Sendable {
    let threads: Int
    private let generation = Atomic<Int>(0)
    /// Each thread's share of the current job's indices.
    private let shares: [TaskShare]
    /// Workers currently inside a job (joined and not yet left).
    private let active = Atomic<Int>(0)
    /// Generation of the job that may still be joined, or -1 once the caller has closed it.
    private let openGeneration = Atomic<Int>(-1)
    private let busy = Atomic<Bool>(false)
    private let shutdown = Atomic<Bool>(false)
    private let condition = NSCondition()
    private var job: ((Int, Int) -> Void)?

    init(threads: Int) {
        self.threads = threads
        self.shares = (0..<threads).map { _ in TaskShare() }
    }

    private let clockLock = NSLock()
    private var clocks: [clockid_t] = []

    /// Called by each worker thread as it starts, so its CPU clock can be read from other threads.
    func registerCurrentThreadClock() {
        var clock = clockid_t()
        guard pthread_getcpuclockid(pthread_self(), &clock) == 0 else { return }
        clockLock.lock()
        clocks.append(clock)
        clockLock.unlock()
    }

    func workerCPUTimeNanos() -> UInt64 {
        clockLock.lock()
        let ids = clocks
        clockLock.unlock()
        var total: UInt64 = 0
        for id in ids {
            var ts = timespec()
            if clock_gettime(id, &ts) == 0 { total &+= UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec) }
        }
        return total
    }

    func stop() {
        shutdown.store(true, ordering: .releasing)
        condition.lock()
        generation.add(1, ordering: .releasing)
        condition.broadcast()
        condition.unlock()
    }

    func parallelFor(_ count: Int, serial: Bool, _ body: (Int, Int) -> Void) {
        if count <= 0 { return }
        if serial || count == 1 || !busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
            for i in 0..<count { body(i, 0) }
            return
        }
        withoutActuallyEscaping(body) { escaping in
            job = escaping
            for t in 0..<threads { shares[t].reset(count * t / threads..<count * (t + 1) / threads) }
            condition.lock()
            let g = generation.load(ordering: .relaxed) + 1
            openGeneration.store(g, ordering: .sequentiallyConsistent)
            generation.store(g, ordering: .sequentiallyConsistent)
            condition.broadcast()
            condition.unlock()
            drain(escaping, thread: 0)
            // Close the job, then wait only for workers that joined before it closed.
            openGeneration.store(-1, ordering: .sequentiallyConsistent)
            while active.load(ordering: .sequentiallyConsistent) > 0 { spinHint() }
            job = nil
        }
        busy.store(false, ordering: .releasing)
    }

    /// Runs the thread's own share from its front, then what is left of the other shares from
    /// their backs (what their owners would reach last).
    @inline(__always)
    private func drain(_ body: (Int, Int) -> Void, thread: Int) {
        while let i = shares[thread].take(fromBack: false) { body(i, thread) }
        for step in 1..<threads {
            let share = shares[(thread + step) % threads]
            while let i = share.take(fromBack: true) { body(i, thread) }
        }
    }

    func workerLoop(thread: Int) {
        var seen = generation.load(ordering: .acquiring)
        while true {
            var spins = 0
            var current = generation.load(ordering: .acquiring)
            while current == seen && spins < 20_000 {
                spinHint()
                spins += 1
                current = generation.load(ordering: .acquiring)
            }
            if current == seen {
                condition.lock()
                while generation.load(ordering: .acquiring) == seen { condition.wait() }
                condition.unlock()
                current = generation.load(ordering: .acquiring)
            }
            seen = current
            if shutdown.load(ordering: .acquiring) { return }
            active.add(1, ordering: .sequentiallyConsistent)
            if openGeneration.load(ordering: .sequentiallyConsistent) == current, let body = job {
                drain(body, thread: thread)
            }
            active.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    @inline(__always)
    private func spinHint() {
        #if arch(x86_64) || arch(i386)
        // A short pause between atomic polls.
        for _ in 0..<4 { _ = generation.load(ordering: .relaxed) }
        #endif
    }
}

/// One thread's share of a job's indices, `front..<back`, packed into one atomic word (front in the
/// low 32 bits) so its owner can take from the front while another thread takes from the back.
final class TaskShare: @unchecked Sendable {
    private let bounds = Atomic<Int>(0)

    func reset(_ range: Range<Int>) {
        bounds.store(range.lowerBound | range.upperBound << 32, ordering: .relaxed)
    }

    /// Takes the first index left (its owner's next), or with `fromBack` the last (for a thread
    /// whose own share is done); nil once none is left.
    @inline(__always)
    func take(fromBack: Bool) -> Int? {
        var s = bounds.load(ordering: .relaxed)
        while true {
            let front = s & 0xFFFF_FFFF, back = s >> 32
            if front >= back { return nil }
            let desired = fromBack ? front | (back - 1) << 32 : s + 1
            let (done, now) = bounds.compareExchange(expected: s, desired: desired, ordering: .relaxed)
            if done { return fromBack ? back - 1 : front }
            s = now
        }
    }
}
