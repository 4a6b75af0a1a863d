import Foundation

/// A fixed set of OS threads for CPU work (image decoding), so it never runs on NIO event loops
/// or on the Swift concurrency cooperative pool.
public final class ComputePool: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [() -> Void] = []
    private var head = 0
    private var stopping = false
    public let threadCount: Int

    public init(threads: Int, name: String = "glimpse-compute") {
        threadCount = max(1, threads)
        for i in 0..<threadCount {
            let thread = Thread { [unowned self] in self.workLoop() }
            thread.name = "\(name)-\(i)"
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    /// Number of jobs waiting for a thread.
    public var pendingJobs: Int {
        condition.lock()
        defer { condition.unlock() }
        return jobs.count - head
    }

    /// Runs `body` on a compute thread and returns its result.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            submit {
                do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
            }
        }
    }

    public func submit(_ job: @escaping () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Lets the threads finish queued jobs and exit.
    public func shutdown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    private func workLoop() {
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
