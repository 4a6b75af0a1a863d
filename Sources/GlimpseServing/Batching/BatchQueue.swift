import Foundation
import GlimpseEngine
import GlimpseTensor
import Metrics

/// Drives a `BatchScheduler` for one model: owns the waiting items and the worker threads that
/// run batches on the engine. Workers are OS threads, never event loops.
final class BatchQueue: @unchecked Sendable {
    struct Pending {
        var input: Tensor
        var enqueuedAt: UInt64
        var deadline: UInt64?
        var continuation: CheckedContinuation<BatchItemResult, any Error>
    }

    let model: any BatchModel
    let itemShape: [Int]
    let inputDType: DType
    private let condition = NSCondition()
    private var scheduler: BatchScheduler
    private var pending: [UInt64: Pending] = [:]
    private var nextID: UInt64 = 0
    private var stopping = false
    private let onBatch: @Sendable (BatchCost) -> Void
    let metrics: ServingMetrics
    /// Taken by a worker after it has made a batch's results and before it resumes the callers, and by
    /// each caller once resumed: the continuation already orders the two, but through the Swift
    /// concurrency runtime and libdispatch, which ThreadSanitizer cannot see (scripts/tsan-suppressions.txt);
    /// the lock makes the order visible to it, for two uncontended lock round trips a batch and a call.
    let handoff = NSLock()
    /// Recorded on every request or batch, so kept rather than looked up.
    private let depthGauge: Gauge
    private let marginGauge: Gauge
    /// Batches running in every queue of the service (shared by its queues).
    let occupancy: EngineOccupancy

    init(model: any BatchModel, configuration: BatchScheduler.Configuration, workers: Int, metrics: ServingMetrics = .none,
         occupancy: EngineOccupancy = EngineOccupancy(), onBatch: @escaping @Sendable (BatchCost) -> Void = { _ in }) throws {
        guard let spec = model.inputs.first else { throw EngineError("model \(model.name) has no inputs") }
        self.model = model
        self.itemShape = Array(spec.shape.dropFirst())
        self.inputDType = spec.dtype
        var config = configuration
        // A model whose batch dimension is fixed at 1 runs items one at a time.
        if spec.shape.first != -1 { config.maxBatchSize = 1; config.allowedBatchSizes = nil }
        self.scheduler = BatchScheduler(configuration: config, workers: workers)
        self.onBatch = onBatch
        self.metrics = metrics
        self.depthGauge = metrics.queueDepthGauge(model: model.name)
        self.marginGauge = metrics.deadlineMarginGauge(model: model.name)
        self.occupancy = occupancy
        for i in 0..<max(1, workers) {
            let name = "gb\(i)-\(model.name)"
            let thread = Thread { [self] in
                nameCurrentThread(name)
                self.workLoop()
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    /// Warms the model up and calibrates the queue before it takes traffic. Every batch size it may
    /// form is run to warm up (plans, caches, and the engine's choice to split batches or not), then
    /// timed twice (the faster run counts) the way
    /// it runs under load: on one thread when there are several workers, since busy workers each keep
    /// to their own. With several workers and engine threads, a batch of one is also timed on all the
    /// threads. The scheduler seeds its latency model from these times and picks the batch size with
    /// the lowest cost per item and whether a lone batch should use all threads (`adopt`).
    /// A model that fails here is not put in service. Afterwards it holds only batch 1's plan.
    func calibrate() throws {
        condition.lock()
        let sizes = Self.calibrationSizes(allowed: scheduler.configuration.allowedBatchSizes,
                                          maxBatchSize: scheduler.configuration.maxBatchSize)
        let workers = scheduler.workers
        condition.unlock()
        let loadedParallel = workers == 1
        let loaded = try timeSizes(sizes, parallel: loadedParallel)
        let parallelOne = workers > 1 && model.threads > 1 ? try timeBatch(1, parallel: true) : nil
        condition.lock()
        scheduler.adopt(calibration: loaded, parallelOne: parallelOne)
        let limit = scheduler.batchLimit, parallelHelps = scheduler.parallelHelps
        if let full = loaded[limit] ?? loaded.max(by: { $0.key < $1.key })?.value, full > 0 {
            let size = loaded[limit] != nil ? limit : (loaded.keys.max() ?? 1)
            aloneCapacity = Double(max(1, workers) * size) * 1e9 / Double(full)
            fullCost = FullBatchCost(calibrated: loaded, fullSize: size, initialRatio: loadedParallel ? Double(max(1, model.threads)) : 1)
        }
        condition.unlock()
        let perItem = loaded.sorted { $0.key < $1.key }
            .map { String(format: "%d: %.3f", $0.key, Double($0.value) / Double($0.key) / 1e6) }.joined(separator: ", ")
        var summary = "batches up to \(limit); ms per item by batch size \(perItem)"
        if let parallelOne {
            summary += String(format: "; a lone batch of 1 on %d threads %.3f ms (%@)", model.threads, Double(parallelOne) / 1e6,
                              parallelHelps ? "used when idle" : "not faster, unused")
        }
        calibrationSummary = summary
    }

    /// What calibration measured and chose, for the load log.
    private(set) var calibrationSummary = "not calibrated"

    /// True once the queue takes no more work (replaced, unloaded or shutting down).
    var isStopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }

    var queueLength: Int {
        condition.lock()
        defer { condition.unlock() }
        return scheduler.queueLength
    }

    /// Predicted latency model coefficients (ns per item, ns per batch).
    var latencyModel: LatencyModel {
        condition.lock()
        defer { condition.unlock() }
        return scheduler.latency
    }

    /// Items per second the queue sustains when busy: its workers each running full batches, at the
    /// latency model's time for a full batch (learned from recent batches, so it includes the workers
    /// sharing the engine threads); nil until the latency model has seen a batch.
    var capacityPerSecond: Double? {
        condition.lock()
        defer { condition.unlock() }
        guard scheduler.latency.isCalibrated else { return nil }
        let full = scheduler.batchLimit
        let nanos = scheduler.latency.predict(size: full)
        guard nanos > 0 else { return nil }
        return Double(scheduler.workers * full) * 1e9 / nanos
    }

    /// Items per second the queue sustains with the model alone on the machine: its workers each running
    /// full batches on their own core, at the times calibration measured before the model served (so
    /// unaffected by what else runs); nil before calibration.
    var aloneCapacityPerSecond: Double? {
        condition.lock()
        defer { condition.unlock() }
        return aloneCapacity
    }
    private var aloneCapacity: Double?

    /// CPU time the model's batches have taken so far (worker and engine threads).
    var engineCPUNanos: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return engineCPU
    }
    private var engineCPU: UInt64 = 0

    /// CPU time of the model's engine threads outside its batches so far (spinning before they sleep,
    /// after a parallel batch): spent because the queue was not busy, so counted neither in a batch's
    /// cost nor in a request's.
    var engineThreadsIdleCPUNanos: UInt64 {
        let total = model.engineThreadsCPUNanos()
        condition.lock()
        defer { condition.unlock() }
        return total > poolInBatches ? total - poolInBatches : 0
    }
    private var poolInBatches: UInt64 = 0

    func noteEngineThreads(_ nanos: UInt64) {
        guard nanos > 0 else { return }
        condition.lock()
        poolInBatches &+= nanos
        condition.unlock()
    }

    /// Wall time the model's workers have spent running batches so far, summed over workers.
    var engineBusyNanos: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return engineBusy
    }
    private var engineBusy: UInt64 = 0

    /// Engine CPU nanoseconds per item at full batches (`FullBatchCost`): calibration's, scaled by how
    /// the CPU time of recent batches compares with calibration's time for their sizes. nil before
    /// calibration.
    var engineCPUNanosPerItem: Double? {
        condition.lock()
        defer { condition.unlock() }
        return fullCost?.cpuNanosPerItem
    }
    private var fullCost: FullBatchCost?

    /// Predicted nanoseconds from `now` until a request queued now would be answered (queue wait plus
    /// its batch's run); nil until the latency model has seen a batch.
    func predictedWaitNanos(now: UInt64) -> UInt64? {
        condition.lock()
        defer { condition.unlock() }
        scheduler.forgetIfIdle(now: now)
        guard scheduler.latency.isCalibrated else { return nil }
        let done = scheduler.predictedCompletion(now: now, position: scheduler.queueLength)
        return done > now ? done - now : 0
    }

    /// Recent time to decode and preprocess one image on a decode thread (not counting any wait for
    /// the thread), exponentially weighted.
    private var preprocessNanos = 0.0

    func notePreprocessing(nanos: UInt64) {
        condition.lock()
        preprocessNanos = preprocessNanos == 0 ? Double(nanos) : preprocessNanos * 0.9 + Double(nanos) * 0.1
        condition.unlock()
    }

    /// Images admitted by `admit` and still being decoded: they will be queued ahead of later calls.
    private var incoming = 0

    /// Admits a call of `images` images before any of them is decoded, and counts them as incoming
    /// until `incomingArrived` (once per image, decoded or not). With a deadline, refuses the call at
    /// once (-32000 `deadline_unmeetable`) when its images are predicted to finish after it: decoded at
    /// the recent pace behind the `decodeAhead` jobs waiting for the `decodeThreads` decode threads,
    /// then queued behind what waits and what is still being decoded. Under overload this keeps the
    /// cores for requests that can still make it, instead of decoding requests that would be refused
    /// or expire. Nothing is refused on a prediction before the latency model has seen a batch.
    func admit(images: Int, now: UInt64, deadline: UInt64?, decodeAhead: Int, decodeThreads: Int) throws {
        condition.lock()
        scheduler.forgetIfIdle(now: now)
        if let deadline, !stopping {
            let decision = scheduler.admit(images: images, incoming: incoming, now: now, deadline: deadline, preprocessNanos: preprocessNanos,
                                           decodeAhead: decodeAhead, decodeThreads: decodeThreads)
            if case .refuse(let reason, let retry) = decision {
                let oneItem = scheduler.latency.predict(size: 1)
                condition.unlock()
                if reason == .deadlineTooShort {
                    throw ServingError.deadlineExceeded(String(format: "the deadline is shorter than decoding and one inference of %@ even with an empty queue (predicted %.1f ms)", model.name, (preprocessNanos + oneItem) / 1e6))
                }
                throw ServingError.overloaded(reason: reason.rawValue, retryAfterMs: max(1, Int(Double(retry) / 1e6)))
            }
        }
        incoming += images
        condition.unlock()
    }

    /// One image admitted by `admit` has been decoded (or failed to): it is no longer incoming.
    func incomingArrived() {
        condition.lock()
        incoming = max(0, incoming - 1)
        condition.unlock()
    }

    /// Queues one preprocessed item (shape `itemShape`) and waits for its batch to run.
    /// `deadline` is a monotonic time in nanoseconds.
    func submit(_ input: Tensor, deadline: UInt64? = nil) async throws -> BatchItemResult {
        let result: Result<BatchItemResult, any Error>
        do { result = .success(try await enqueue(input, deadline: deadline)) } catch { result = .failure(error) }
        handoff.withLock {}
        return try result.get()
    }

    /// A request whose task is cancelled while it waits (its client went away) leaves the queue at
    /// once with `CancellationError` and never runs; one already in a running batch finishes with it,
    /// and the caller drops the result.
    private func enqueue(_ input: Tensor, deadline: UInt64?) async throws -> BatchItemResult {
        let id = condition.withLock { nextID += 1; return nextID }
        return try await withTaskCancellationHandler {
            try await enqueue(input, id: id, deadline: deadline)
        } onCancel: {
            cancelWaiting(id: id)
        }
    }

    /// Takes request `id` out of the queue if it is still waiting there, answering it with `CancellationError`.
    private func cancelWaiting(id: UInt64) {
        condition.lock()
        let item = scheduler.cancel(id: id) ? pending.removeValue(forKey: id) : nil
        let depth = scheduler.queueLength
        condition.unlock()
        guard let item else { return }
        depthGauge.record(depth)
        item.continuation.resume(throwing: CancellationError())
    }

    private func enqueue(_ input: Tensor, id: UInt64, deadline: UInt64?) async throws -> BatchItemResult {
        try await withCheckedThrowingContinuation { continuation in
            condition.lock()
            if stopping {
                condition.unlock()
                continuation.resume(throwing: ServingError.modelUnavailable("model \(model.name) is shutting down"))
                return
            }
            // Cancelled before it was queued: the cancellation handler found nothing to take out.
            if Task.isCancelled {
                condition.unlock()
                continuation.resume(throwing: CancellationError())
                return
            }
            let now = monotonicNanos()
            let decision = scheduler.enqueue(id: id, now: now, deadline: deadline)
            // Read under the lock: a worker changes the queue as soon as it is released.
            let depth = scheduler.queueLength
            let oneItemMs = scheduler.latency.predict(size: 1) / 1e6
            if decision == .accepted {
                pending[id] = Pending(input: input, enqueuedAt: now, deadline: deadline, continuation: continuation)
                condition.signal()
            }
            condition.unlock()
            depthGauge.record(depth)
            switch decision {
            case .accepted:
                break
            case .rejected(.deadlineTooShort, _):
                continuation.resume(throwing: ServingError.deadlineExceeded(String(format: "the deadline is shorter than one inference of %@ even with an empty queue (predicted %.1f ms)", model.name, oneItemMs)))
            case .rejected(let reason, let retry):
                continuation.resume(throwing: ServingError.overloaded(reason: reason.rawValue, retryAfterMs: Int((retry + 999_999) / 1_000_000)))
            }
        }
    }

    /// Stops accepting; workers finish what is queued, then exit.
    func shutdown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    /// Stops accepting and answers every waiting request with `error` at once (the model was
    /// unloaded). A batch already running finishes normally.
    func close(failingWaiting error: ServingError) {
        condition.lock()
        stopping = true
        var waiting: [Pending] = []
        for id in pending.keys.sorted() where scheduler.cancel(id: id) {
            if let item = pending.removeValue(forKey: id) { waiting.append(item) }
        }
        condition.broadcast()
        condition.unlock()
        handoff.withLock {}
        for item in waiting { item.continuation.resume(throwing: error) }
    }

    private func workLoop() {
        condition.lock()
        while true {
            let now = monotonicNanos()
            switch scheduler.next(now: now, flush: stopping) {
            case .dispatch(let ids):
                let batch = ids.compactMap { pending.removeValue(forKey: $0) }
                let depth = scheduler.queueLength, margin = scheduler.margin.factor
                // All engine threads only for a batch alone on the machine: no other batch, of this
                // model or another, is running (`EngineOccupancy`).
                let othersRunning = occupancy.begin()
                // Nor while batches often overlap (several workers: one alone is the only way to use
                // the cores).
                let parallel = othersRunning == 0 && scheduler.dispatchMayUseAllThreads()
                    && (scheduler.workers == 1 || occupancy.overlapsRarely())
                condition.unlock()
                depthGauge.record(depth)
                marginGauge.record(margin)
                let start = monotonicNanos()
                let (cost, results) = run(batch, startedAt: start, parallel: parallel)
                let took = monotonicNanos() - start
                occupancy.end()
                // The batch's metrics are recorded before its callers resume, so a caller that reads
                // them after its answer sees its own batch counted.
                onBatch(cost)
                resume(batch, with: results)
                condition.lock()
                engineCPU &+= cost.cpuNanos
                engineBusy &+= took
                // Only batches run the way calibration ran them (on one thread each with several workers).
                if !(parallel && scheduler.workers > 1) { fullCost?.observe(size: cost.size, cpuNanos: cost.cpuNanos) }
                scheduler.batchDone(size: batch.count, durationNanos: took, now: monotonicNanos())
                // A worker free again matters only to a worker waiting for a batch to fill. With
                // nothing queued the others sleep until a request comes (which signals one of them):
                // waking them after every batch cost each a futex wake-up and sleep per batch.
                if scheduler.queueLength > 0 { condition.broadcast() }
            case .expire(let ids):
                marginGauge.record(scheduler.margin.factor)
                let expired = ids.compactMap { pending.removeValue(forKey: $0) }
                handoff.withLock {}
                for item in expired {
                    let waited = String(format: "%.1f", Double(now &- min(item.enqueuedAt, now)) / 1e6)
                    if let deadline = item.deadline, deadline > now {
                        item.continuation.resume(throwing: ServingError.deadlineExceeded(
                            "the deadline would pass before its batch could finish (predicted), after \(waited) ms in the queue"))
                    } else {
                        item.continuation.resume(throwing: ServingError.deadlineExceeded("the time planned for the answer (deadline_ms less the headroom kept for transport) passed after \(waited) ms in the queue"))
                    }
                }
            case .waitUntil(let due):
                let seconds = Double(due &- now) / 1e9
                _ = condition.wait(until: Date().addingTimeInterval(seconds))
            case .idle:
                if stopping && scheduler.queueLength == 0 {
                    condition.unlock()
                    return
                }
                condition.wait()
            }
        }
    }

}
