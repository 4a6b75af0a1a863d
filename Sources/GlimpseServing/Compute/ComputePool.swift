import Foundation

/// A fixed set of OS threads for CPU work (image decoding), so it never runs on NIO event loops
/// or on the Swift concurrency cooperative pool.
public final class ComputePool: @unchecked Sendable {
    private let queue: JobQueue
    public let threadCount: Int

    public init(threads: Int, name: String = "glimpse-compute") {
        threadCount = max(1, threads)
        queue = JobQueue()
        for i in 0..<threadCount {
            // Threads hold the queue, not the pool, so the pool can go away while they finish.
            let queue = self.queue
            let thread = Thread { queue.workLoop() }
            thread.name = "\(name)-\(i)"
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    deinit {
        queue.stop()
    }

    /// Number of jobs waiting for a thread.
    public var pendingJobs: Int { queue.pending }

    /// Runs `body` on a compute thread and returns its result.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            queue.submit {
                do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
            }
        }
    }

    public func submit(_ job: @escaping () -> Void) {
        queue.submit(job)
    }

    /// Lets the threads finish queued jobs and exit.
    public func shutdown() {
        queue.stop()
    }
}

/// The jobs of a `ComputePool`, shared with its threads.
final class JobQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [() -> Void] = []
    private var head = 0
    private var stopping = false

    var pending: Int {
        condition.lock()
        defer { condition.unlock() }
        return jobs.count - head
    }

    func submit(_ job: @escaping () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    func workLoop() {
        while true {
            condition.lock()
            while head == jobs.count && !stopping { condition.wait() }
            if head == jobs.count && stopping {
                condition.unlock()
                return
            }
            let job = jobs[head]
            head += 1
            if head > 1024 && head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            condition.unlock()
            job()
        }
    }
}
