import NIOPosix
import Synchronization

/// OS threads for CPU work that must not run on NIO event loops or on the Swift concurrency pool
/// (image decoding, model compilation): SwiftNIO's `NIOThreadPool`, plus the count of jobs
/// still waiting for a thread, which admission control reads as the decode backlog.
///
/// A job whose task is cancelled before a thread takes it (its client went away) is not run.
/// Per-job cost against the hand-written condition-variable pool this replaced: see the
/// README's architecture notes ("Decode pool").
public final class ComputePool: Sendable {
    private let pool: NIOThreadPool
    private let waiting = Atomic<Int>(0)
    public let threadCount: Int

    public init(threads: Int, name: String = "glimpse-compute") {
        threadCount = max(1, threads)
        pool = NIOThreadPool(numberOfThreads: threadCount)
        pool._start(threadNamePrefix: "\(name)-")
    }

    deinit {
        pool.shutdownGracefully { _ in }
    }

    /// Number of jobs waiting for a thread.
    public var pendingJobs: Int { waiting.load(ordering: .relaxed) }

    /// Runs `body` on a pool thread and returns its result; throws `CancellationError` if the
    /// task is cancelled before a thread takes the job, or if the pool has been shut down.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        waiting.add(1, ordering: .relaxed)
        let started = StartFlag(self)
        defer { started.markStarted() }
        return try await pool.runIfActive {
            started.markStarted()
            return try body()
        }
    }

    fileprivate func jobLeftQueue() { waiting.subtract(1, ordering: .relaxed) }

    /// Lets the threads finish queued jobs and exit.
    public func shutdown() {
        pool.shutdownGracefully { _ in }
    }
}

/// Takes a job off the pool's waiting count exactly once: when a thread starts it, or when the
/// call ends without it running (cancelled, or the pool was shut down).
private final class StartFlag: Sendable {
    private let done = Atomic<Bool>(false)
    private let pool: ComputePool

    init(_ pool: ComputePool) { self.pool = pool }

    func markStarted() {
        if !done.exchange(true, ordering: .relaxed) { pool.jobLeftQueue() }
    }
}
