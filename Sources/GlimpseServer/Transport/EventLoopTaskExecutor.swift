import NIOCore

/// A task executor (SE-0417) that runs its tasks' jobs on one NIO event loop.
///
/// A small `/rpc` call (`FrameServing.loopBodyLimit`) runs its task here, on its connection's
/// loop, instead of on Swift Concurrency's global pool: the task starts without waking a pool
/// thread, and when its batch finishes, the batch worker resumes it straight on the loop that
/// writes the answer. Each request then crosses threads twice (loop to batch worker and back)
/// instead of four times (loop, pool, worker, pool, loop). Work that may take long leaves the
/// loop: large images decode on the decode pool, and calls other than a plain `classify` run on
/// the global pool (`RPCDispatcher.handle`).
final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
