import Foundation
import GlimpseEngine
import GlimpseTensor

/// Running a batch and handing its results back to the callers.
extension BatchQueue {
    /// Resumes the callers, after the hand-off lock (see `handoff`).
    func resume(_ batch: [Pending], with results: Result<[BatchItemResult], any Error>) {
        handoff.withLock {}
        for (i, item) in batch.enumerated() { item.continuation.resume(with: results.map { $0[i] }) }
    }

    /// Runs a batch and returns its cost and each item's answer (in batch order), or the error
    /// that fails them all. It does not resume the callers.
    func run(_ batch: [Pending], startedAt: UInt64, parallel: Bool)
        -> (BatchCost, Result<[BatchItemResult], any Error>) {
        let oldestWait = batch.map { startedAt - $0.enqueuedAt }.max() ?? 0
        guard !batch.isEmpty else { return (BatchCost(size: 0, wallNanos: 0, cpuNanos: 0, oldestWaitNanos: 0), .success([])) }
        // A batch's CPU: its worker thread's, plus the engine threads' when it ran on them. A batch on
        // one thread does not count the engine threads, which another worker's batch may be using.
        let threadStart = CPUClock.thread()
        let poolStart = parallel ? model.engineThreadsCPUNanos() : 0
        do {
            let n = batch.count
            let input = try Self.assemble(batch.map(\.input), itemShape: itemShape, dtype: inputDType)
            let outputs = try model.run([input], parallel: parallel)
            let inferenceNanos = monotonicNanos() - startedAt
            let pool = parallel ? model.engineThreadsCPUNanos() &- poolStart : 0
            let cpu = (CPUClock.thread() &- threadStart) &+ pool
            noteEngineThreads(pool)
            guard let output = outputs.first, output.shape.rank >= 1, output.shape[0] == n else {
                throw EngineError("model \(model.name) returned no batch output")
            }
            let answers = batch.enumerated().map { i, item in
                BatchItemResult(scores: output.item(i).floats(), batchSize: n,
                                queueNanos: startedAt - item.enqueuedAt, inferenceNanos: inferenceNanos,
                                cpuNanosPerItem: cpu / UInt64(n))
            }
            return (BatchCost(size: n, wallNanos: inferenceNanos, cpuNanos: cpu, oldestWaitNanos: oldestWait), .success(answers))
        } catch {
            return (BatchCost(size: batch.count, wallNanos: monotonicNanos() - startedAt, cpuNanos: 0, oldestWaitNanos: oldestWait),
                    .failure(error))
        }
    }
}
