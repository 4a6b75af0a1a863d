import Foundation
import Synchronization

/// The engine's own compute threads: `threads - 1` workers plus the calling thread.
///
/// `parallelFor` hands out indices dynamically. Workers spin briefly after each job (so the ~50
/// parallel regions of one inference do not each pay a futex wake-up) and then sleep. The caller
/// never waits for a worker that has not joined the job yet: when the caller has taken the last
/// index it closes the job and waits only for workers still running an index, so a worker that
/// is descheduled (machine oversubscribed) or still waking up costs nothing. If another caller is
/// already using the pool, the call runs serially on its own thread instead of waiting, so
/// concurrent `run` calls never block each other.
public final class ThreadPool: @unchecked Sendable {
    public let threads: Int
    private let state: PoolState

    public static let serial = ThreadPool(threads: 1)

    public init(threads: Int) {
        self.threads = max(1, threads)
        self.state = PoolState(workers: self.threads - 1)
        for i in 1..<self.threads {
            let state = self.state
            let t = Thread {
                state.registerCurrentThreadClock()
                state.workerLoop()
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
        state.parallelFor(count, serial: threads == 1, body)
    }
}

/// Shared between the pool and its worker threads (which keep it alive until they exit).
final class PoolState: @unchecked Sendable {
    let workerCount: Int
    private let generation = Atomic<Int>(0)
    private let nextIndex = Atomic<Int>(0)
    /// Workers currently inside a job (joined and not yet left).
    private let active = Atomic<Int>(0)
    /// Generation of the job that may still be joined, or -1 once the caller has closed it.
    private let openGeneration = Atomic<Int>(-1)
    private let busy = Atomic<Bool>(false)
    private let shutdown = Atomic<Bool>(false)
    private let condition = NSCondition()
    private var job: ((Int) -> Void)?
    private var jobCount = 0

    init(workers: Int) { self.workerCount = workers }

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

    func parallelFor(_ count: Int, serial: Bool, _ body: (Int) -> Void) {
        if count <= 0 { return }
        if serial || count == 1 || !busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
            for i in 0..<count { body(i) }
            return
        }
        withoutActuallyEscaping(body) { escaping in
            job = escaping
            jobCount = count
            nextIndex.store(0, ordering: .relaxed)
            condition.lock()
            let g = generation.load(ordering: .relaxed) + 1
            openGeneration.store(g, ordering: .sequentiallyConsistent)
            generation.store(g, ordering: .sequentiallyConsistent)
            condition.broadcast()
            condition.unlock()
            drain(escaping, count)
            // Close the job, then wait only for workers that joined before it closed.
            openGeneration.store(-1, ordering: .sequentiallyConsistent)
            while active.load(ordering: .sequentiallyConsistent) > 0 { spinHint() }
            job = nil
        }
        busy.store(false, ordering: .releasing)
    }

    @inline(__always)
    private func drain(_ body: (Int) -> Void, _ count: Int) {
        while true {
            let i = nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue
            if i >= count { return }
            body(i)
        }
    }

    func workerLoop() {
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
                drain(body, jobCount)
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
