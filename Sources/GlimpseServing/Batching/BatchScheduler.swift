/// Batching policy of one model queue, as a pure state machine: no clocks, threads or sockets.
/// The driver (`BatchQueue`) feeds it events with the current time and carries out the actions.
public struct BatchScheduler: Sendable {
    public enum DelayPolicy: Sendable, Hashable {
        /// Always give the oldest request up to `maxQueueDelay` for others to join.
        case fixed
        /// Wait only when the recent arrival rate says another request will come within the delay;
        /// otherwise dispatch at once. Under load, batches still form while workers are busy.
        case adaptive
    }

    public struct Configuration: Sendable, Hashable {
        /// Largest batch handed to the engine.
        public var maxBatchSize: Int
        /// Longest time the oldest request waits for others to join its batch.
        public var maxQueueDelayNanos: UInt64
        /// Requests waiting beyond this are refused with `queue_full`.
        public var maxQueueLength: Int
        /// If set, batches are cut to the largest of these sizes that is available (e.g. [1, 4, 8]).
        public var allowedBatchSizes: [Int]?
        public var delayPolicy: DelayPolicy
        /// Refuse at once a request predicted to miss its deadline.
        public var shedUnmeetableDeadlines: Bool
        /// Refuse (queue_full) a request whose predicted wait is longer than this, whatever the queue
        /// length: it bounds latency by time, which suits slow and fast models alike.
        public var maxPredictedWaitNanos: UInt64

        public init(maxBatchSize: Int = 8, maxQueueDelayNanos: UInt64 = 2_000_000, maxQueueLength: Int = 256,
                    allowedBatchSizes: [Int]? = nil, delayPolicy: DelayPolicy = .adaptive, shedUnmeetableDeadlines: Bool = true,
                    maxPredictedWaitNanos: UInt64 = 2_000_000_000) {
            self.maxBatchSize = max(1, maxBatchSize)
            self.maxQueueDelayNanos = maxQueueDelayNanos
            self.maxQueueLength = max(1, maxQueueLength)
            self.allowedBatchSizes = allowedBatchSizes.map { Array(Set($0.filter { $0 >= 1 && $0 <= max(1, maxBatchSize) })).sorted() }
            self.delayPolicy = delayPolicy
            self.shedUnmeetableDeadlines = shedUnmeetableDeadlines
            self.maxPredictedWaitNanos = maxPredictedWaitNanos
        }
    }

    /// Why the scheduler refuses a request; the raw value is the `data.reason` clients see.
    public enum RefusalReason: String, Equatable, Sendable {
        /// The queue is at its length limit, or its predicted wait is past the limit.
        case queueFull = "queue_full"
        /// The request would finish after its deadline behind what waits (shedding).
        case deadlineUnmeetable = "deadline_unmeetable"
        /// The deadline is shorter than the work itself on an idle server: no retry can help, so it
        /// is answered as "deadline exceeded", not as overload.
        case deadlineTooShort = "deadline_too_short"
    }

    public enum EnqueueDecision: Equatable, Sendable {
        case accepted
        case rejected(reason: RefusalReason, retryAfterNanos: UInt64)
    }

    /// The decision on a call before its images are decoded.
    public enum AdmissionDecision: Equatable, Sendable {
        case admit
        case refuse(reason: RefusalReason, retryAfterNanos: UInt64)
    }

    public enum Action: Equatable, Sendable {
        /// Run these requests as one batch now (oldest first). Marks one worker busy.
        case dispatch(ids: [UInt64])
        /// These requests' deadlines passed while they waited, or would pass before their batch could
        /// finish even if they ran alone: answer them with "deadline exceeded".
        case expire(ids: [UInt64])
        /// Nothing to run before this time (a worker sleeps until then or the next event).
        case waitUntil(UInt64)
        /// Queue empty or all workers busy: sleep until the next event.
        case idle
    }

    struct Entry: Sendable {
        var id: UInt64
        var arrival: UInt64
        var deadline: UInt64?
    }

    public let configuration: Configuration
    private var entries: [Entry] = []
    private var head = 0
    public private(set) var idleWorkers: Int
    public let workers: Int
    /// Latency model of this queue's batches.
    public private(set) var latency: LatencyModel
    /// Predicted end of the batches now running.
    private var busyUntil: [UInt64] = []
    /// The latency model as calibration left it, and when the last batch finished (see `forgetIfIdle`).
    private var calibratedLatency: LatencyModel?
    private var lastBatchDone: UInt64 = 0
    /// Exponentially weighted mean gap between arrivals.
    public private(set) var meanInterarrivalNanos: Double = 0
    /// Requests that recent adaptive waits gathered per wait, exponentially weighted. A closed-loop
    /// client with one request in flight arrives often but never while its request waits, so dense
    /// arrivals alone would make every request wait for nothing; waits that gather nobody stop the
    /// adaptive policy waiting, and it probes again slowly (see `next`).
    public private(set) var waitYield: Double = 1
    /// Queue length when the current adaptive wait began (nil when not waiting).
    private var waitBeganWith: Int?
    private var lastArrival: UInt64?
    /// Feedback on predicted completion times from the requests that expired in the queue.
    public private(set) var margin = DeadlineMargin()

    /// Largest batch worth forming, from the calibration runs (`adopt(calibration:)`): 1 unless some
    /// batch is at least 10 % cheaper per item than a single run (batching costs waiting), else the
    /// smallest size within 5 % of the best. On a CPU a larger batch is not always cheaper per item
    /// (its activations may leave the cache). A batch's cost is its engine time plus
    /// `dispatchNanos`, the queue's own work for it.
    public private(set) var efficientBatchSize: Int?
    /// The serving layer's CPU per batch beside the engine's run: the batch handed to a worker, the
    /// worker woken, each caller resumed, the batch's metrics recorded. Calibration times the engine
    /// alone, so without this a model that runs in tens of microseconds never batched, though its
    /// requests shared this cost: mnist-8 (24 µs a digit, 22 µs in batches of 8) with batches of up
    /// to 8 took 0.949× the server CPU per request of single runs, 3.2 µs less (20 paired rounds of
    /// `tools/bench-serving/ab.py`, 64 in flight), about 4 µs a batch. For models of milliseconds it
    /// changes nothing.
    public static let dispatchNanos: UInt64 = 4_000
    /// Whether a batch that has the machine to itself should use all of the engine's intra-op
    /// threads: true unless calibration measured them to save less than 10% or less than
    /// `minimumParallelSavingNanos` of a lone batch's time.
    public private(set) var parallelHelps = true
    /// Latency a lone batch must save on all threads for them to be used. Waking the helper threads,
    /// their spinning between operators and their sleeping again cost CPU on every batch: on 2 cores
    /// about 90 µs a request for cifar10-small, whose lone batch they make 25 µs faster (BENCHMARKS.md,
    /// "Lone batches"). Below 0.2 ms the saving is lost in the request's own path.
    public static let minimumParallelSavingNanos = 200_000.0

    public init(configuration: Configuration, workers: Int = 1, latency: LatencyModel = LatencyModel()) {
        self.configuration = configuration
        self.workers = max(1, workers)
        self.idleWorkers = max(1, workers)
        self.latency = latency
    }

    public var queueLength: Int { entries.count - head }

    /// The largest batch `next` forms: `maxBatchSize`, capped by the measured efficient size under the
    /// adaptive policy.
    public var batchLimit: Int {
        guard configuration.delayPolicy == .adaptive, let efficient = efficientBatchSize else { return configuration.maxBatchSize }
        return max(1, min(configuration.maxBatchSize, efficient))
    }

    /// Calibration results: `loaded[n]` is the time of a batch of n as it runs under load (each worker
    /// on its own thread when there are several), `parallelOne` the time of a batch of one using every
    /// engine thread (nil when the engine has one). Seeds the latency model with the loaded times and
    /// chooses `efficientBatchSize` and `parallelHelps`.
    /// The batch size calibration's times (nanoseconds per batch, by size) make the most efficient:
    /// the smallest within 5% of the lowest cost per item, or 1 unless some batch is at least 10%
    /// cheaper per item than a single run (batching costs waiting, so it must buy a real saving);
    /// each batch's cost counts `dispatchNanos` beside its time.
    public static func efficientBatchSize(calibration loaded: [Int: UInt64]) -> Int? {
        let perItem = loaded.filter { $0.key >= 1 && $0.value > 0 }
            .map { (n: $0.key, cost: Double($0.value + dispatchNanos) / Double($0.key)) }
        guard let best = perItem.map(\.cost).min() else { return nil }
        if let single = perItem.first(where: { $0.n == 1 })?.cost, single <= best * 1.10 { return 1 }
        return perItem.filter { $0.cost <= best * 1.05 }.map(\.n).min()
    }

    public mutating func adopt(calibration loaded: [Int: UInt64], parallelOne: UInt64? = nil) {
        for (n, nanos) in loaded.sorted(by: { $0.key < $1.key }) where n >= 1 {
            latency.observe(size: n, nanos: Double(nanos))
        }
        if let size = Self.efficientBatchSize(calibration: loaded) { efficientBatchSize = size }
        if let parallelOne, let serialOne = loaded[1], workers > 1 {
            let (parallel, serial) = (Double(parallelOne), Double(serialOne))
            parallelHelps = parallel < 0.9 * serial && serial - parallel >= Self.minimumParallelSavingNanos
        }
        calibratedLatency = latency
    }

    /// After `idleNanos` (100 ms) with nothing queued or running, the latency model goes back to what
    /// calibration measured. A queue that slow batches taught to predict late answers gets no more
    /// traffic from variant selection, so no batch would ever correct it; an idle queue's next batch
    /// starts at once, and its own run teaches the model again.
    public mutating func forgetIfIdle(now: UInt64, idleNanos: UInt64 = 100_000_000) {
        guard let calibrated = calibratedLatency, queueLength == 0, busyUntil.isEmpty,
              now > lastBatchDone, now - lastBatchDone >= idleNanos, latency != calibrated else { return }
        latency = calibrated
    }

    /// Whether the batch just dispatched may use every engine thread. With one worker it always may
    /// (that is the only way to use the cores). With several, only when it runs alone, nothing else
    /// waits (light load: the lowest latency for this request), and calibration found the threads
    /// faster; under load each worker keeps to its own thread, so the workers do not oversubscribe
    /// the cores and batches run at their best throughput. (The queue also requires that no other
    /// model's batch is running and that batches have lately rarely overlapped: `EngineOccupancy`.)
    public func dispatchMayUseAllThreads() -> Bool {
        if workers == 1 { return true }
        return parallelHelps && idleWorkers == workers - 1 && queueLength == 0
    }

    /// Predicted time from `now` until a request enqueued now would finish.
    ///
    /// Its batch starts once a worker is free and the full batches ahead of it have gone; it then runs
    /// with the items already behind it in its batch plus those expected to arrive before it starts
    /// (at the recent arrival rate, up to the largest batch), since a batch takes whatever is waiting
    /// when it is formed. Counting only the items present now would predict the run of a batch of one
    /// for a request that, under load, runs in a full batch.
    public func predictedCompletion(now: UInt64, position: Int) -> UInt64 {
        let maxBatch = batchLimit
        let fullBatchesAhead = position / maxBatch
        var waitForWorker = 0.0
        if idleWorkers == 0, let soonest = busyUntil.min() {
            waitForWorker = soonest > now ? Double(soonest - now) : 0
        }
        let perWorker = Double(fullBatchesAhead) * latency.predict(size: maxBatch) / Double(workers)
        let start = waitForWorker + perWorker
        var joining = 0.0
        if meanInterarrivalNanos > 0 {
            joining = (start / meanInterarrivalNanos).rounded(.down)
        }
        let ownBatch = min(Double(position % maxBatch + 1) + joining, Double(maxBatch))
        let total = (start + latency.predict(size: Int(ownBatch))) * margin.factor
        return now &+ UInt64(max(0, total))
    }

    /// Whether a call of `images` images, still to be decoded, can meet `deadline`: its images, ready for
    /// the queue at `ready`, would be queued behind what waits now and the `incoming` images admitted
    /// earlier and still being decoded. True while the latency model has seen no batch, or when
    /// shedding is off.
    public func admitsBeforeDecode(images: Int, incoming: Int, ready: UInt64, deadline: UInt64) -> Bool {
        guard latency.isCalibrated, configuration.shedUnmeetableDeadlines else { return true }
        return predictedCompletion(now: ready, position: queueLength + max(0, incoming) + max(1, images) - 1) <= deadline
    }

    /// Whether to take a call of `images` images before decoding them, at `now`: they would be decoded
    /// in `preprocessNanos` each behind the `decodeAhead` jobs waiting for `decodeThreads` threads, then
    /// queued behind what waits and the `incoming` images still being decoded. A call whose deadline
    /// is shorter than decoding and one inference on an idle server is refused as too short; one
    /// that would only miss it behind the queue, as unmeetable (with a retry hint of one full batch).
    public func admit(images: Int, incoming: Int, now: UInt64, deadline: UInt64, preprocessNanos: Double,
                      decodeAhead: Int, decodeThreads: Int) -> AdmissionDecision {
        let threads = max(1, decodeThreads)
        let rounds = (decodeAhead + images + threads - 1) / threads
        let ready = now &+ UInt64(preprocessNanos * Double(rounds))
        if admitsBeforeDecode(images: images, incoming: incoming, ready: ready, deadline: deadline) { return .admit }
        if now &+ UInt64(max(0, preprocessNanos + latency.predict(size: 1))) > deadline {
            return .refuse(reason: .deadlineTooShort, retryAfterNanos: 0)
        }
        return .refuse(reason: .deadlineUnmeetable, retryAfterNanos: UInt64(max(0, latency.predict(size: batchLimit))))
    }

    public mutating func enqueue(id: UInt64, now: UInt64, deadline: UInt64? = nil) -> EnqueueDecision {
        let retry = UInt64(max(1_000_000, latency.predict(size: batchLimit) * Double(max(1, queueLength / batchLimit))))
        if queueLength >= configuration.maxQueueLength {
            return .rejected(reason: .queueFull, retryAfterNanos: retry)
        }
        if latency.isCalibrated && queueLength > 0
            && predictedCompletion(now: now, position: queueLength) > now &+ configuration.maxPredictedWaitNanos {
            return .rejected(reason: .queueFull, retryAfterNanos: retry)
        }
        if let deadline {
            // Too short even for an idle server: no retry can help, so it is not called overload.
            if deadline <= now || (latency.isCalibrated && now &+ UInt64(max(0, latency.predict(size: 1))) > deadline) {
                return .rejected(reason: .deadlineTooShort, retryAfterNanos: 0)
            }
            if configuration.shedUnmeetableDeadlines && latency.isCalibrated
                && predictedCompletion(now: now, position: queueLength) > deadline {
                return .rejected(reason: .deadlineUnmeetable, retryAfterNanos: retry)
            }
        }
        if let last = lastArrival, now >= last {
            let gap = Double(now - last)
            meanInterarrivalNanos = meanInterarrivalNanos == 0 ? gap : meanInterarrivalNanos * 0.9 + gap * 0.1
        }
        lastArrival = now
        entries.append(Entry(id: id, arrival: now, deadline: deadline))
        return .accepted
    }

    /// Removes a waiting request (its client went away). Returns whether it was waiting.
    public mutating func cancel(id: UInt64) -> Bool {
        guard let i = entries[head...].firstIndex(where: { $0.id == id }) else { return false }
        entries.remove(at: i)
        return true
    }

    /// What a free worker should do at time `now`. `flush` dispatches without waiting (draining).
    public mutating func next(now: UInt64, flush: Bool = false) -> Action {
        // Requests whose deadline passed in the queue are answered first.
        if let expired = expire(where: { $0 <= now }) { return expired }
        guard queueLength > 0, idleWorkers > 0 else { return .idle }
        let available = queueLength
        let limit = batchLimit
        let due = flush ? now : dispatchDue(now: now, available: available, limit: limit)
        guard available >= limit || now >= due else {
            if waitBeganWith == nil { waitBeganWith = available }
            return .waitUntil(due)
        }
        // Batch sizes that may be formed from what is waiting: any size up to `most`, or the allowed
        // sizes up to it (or `most` itself when none fits).
        let most = min(available, limit)
        let allowed = configuration.allowedBatchSizes
        let anyAllowedFits = allowed.map { $0.contains { $0 <= most } } ?? true
        func formable(_ size: Int) -> Bool {
            guard let allowed, anyAllowedFits else { return size == most || allowed == nil }
            return allowed.contains(size)
        }
        var count = most
        while !formable(count) { count -= 1 }
        if latency.isCalibrated {
            // Members that would finish after their deadline even in a batch of their own are answered
            // now (deadline exceeded): a late answer is of no use, and the place goes to a request that
            // can still make it.
            let alone = now &+ UInt64(max(0, latency.predict(size: 1)))
            if entries[head..<(head + count)].contains(where: { ($0.deadline ?? .max) < alone }) {
                let members = Set(entries[head..<(head + count)].map(\.id))
                if let late = expire(where: { $0 < alone }, among: members) { return late }
            }
            // A batch whose run would end after a member's deadline is cut to the largest size whose run
            // lets every member finish in time (requests admitted when a smaller batch was predicted).
            var size = count
            while size >= 1 {
                if formable(size) {
                    count = size
                    var tightest = UInt64.max
                    for e in entries[head..<(head + size)] { if let d = e.deadline, d < tightest { tightest = d } }
                    if tightest >= now &+ UInt64(max(0, latency.predict(size: size))) { break }
                }
                size -= 1
            }
        }
        if configuration.delayPolicy == .adaptive {
            if let began = waitBeganWith {
                waitYield = waitYield * 0.8 + Double(max(0, available - began)) * 0.2
            } else if waitYield < 0.5 {
                waitYield += 0.002  // a probing wait about every 250 batches
            }
        }
        waitBeganWith = nil
        let ids = entries[head..<(head + count)].map(\.id)
        margin.observe(hits: entries[head..<(head + count)].reduce(0) { $0 + ($1.deadline == nil ? 0 : 1) })
        head += count
        if head > 1024 && head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
        idleWorkers -= 1
        busyUntil.append(now &+ UInt64(latency.predict(size: count)))
        return .dispatch(ids: ids)
    }

    /// When the batch at the head of the queue should go: after the queue delay, shortened by the
    /// adaptive policy and by the tightest deadline among its members.
    private func dispatchDue(now: UInt64, available: Int, limit: Int) -> UInt64 {
        let oldest = entries[head]
        var due = oldest.arrival &+ configuration.maxQueueDelayNanos
        if configuration.delayPolicy == .adaptive {
            // Wait only if another arrival is expected before the delay runs out, and waiting has
            // recently gathered requests.
            let expectMore = meanInterarrivalNanos > 0 && meanInterarrivalNanos < Double(configuration.maxQueueDelayNanos)
            if !expectMore || (waitYield < 0.5 && waitBeganWith == nil) { due = now }
            // Never hold an idle worker longer than running what waits would take: a batch saves at
            // most a part of its run time, so a longer wait costs more capacity than it can buy (a
            // model that runs in 30 µs must not wait 2 ms for company).
            if latency.isCalibrated {
                let run = UInt64(max(0, latency.predict(size: min(available, limit))))
                due = min(due, oldest.arrival &+ run)
            }
        }
        // Never wait so long that the tightest deadline in the batch would be missed.
        if let tightest = entries[head..<(head + min(available, limit))].compactMap(\.deadline).min() {
            let runTime = UInt64(latency.predict(size: min(available, limit)))
            due = min(due, tightest > runTime ? tightest - runTime : 0)
        }
        return due
    }

    /// Removes the waiting requests (all, or only `among`) whose deadline satisfies `isLate`, as an
    /// `expire` action; nil when there are none.
    private mutating func expire(where isLate: (UInt64) -> Bool, among: Set<UInt64>? = nil) -> Action? {
        let expired = entries[head...].filter { e in
            guard let deadline = e.deadline, isLate(deadline) else { return false }
            return among.map { $0.contains(e.id) } ?? true
        }.map(\.id)
        guard !expired.isEmpty else { return nil }
        margin.observe(misses: expired.count)
        let gone = Set(expired)
        entries = Array(entries[head...].filter { !gone.contains($0.id) })
        head = 0
        return .expire(ids: expired)
    }

    /// A worker finished a batch of `size` items that took `durationNanos`.
    /// A measured run outside the queue (warm-up calibration) teaches the latency model.
    public mutating func observeCalibration(size: Int, durationNanos: UInt64) {
        latency.observe(size: size, nanos: Double(durationNanos))
    }

    public mutating func batchDone(size: Int, durationNanos: UInt64, now: UInt64) {
        lastBatchDone = max(lastBatchDone, now)
        idleWorkers = min(workers, idleWorkers + 1)
        if let i = busyUntil.indices.min(by: { busyUntil[$0] < busyUntil[$1] }) { busyUntil.remove(at: i) }
        latency.observe(size: size, nanos: Double(durationNanos))
    }
}
