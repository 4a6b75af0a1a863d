/// Batching policy of one model queue, as a pure state machine: no clocks, threads or sockets.
/// The driver (`BatchQueue`) feeds it events with the current time and carries out the actions.
public struct BatchScheduler: Sendable {
    public struct Configuration: Sendable, Hashable {
        /// Largest batch handed to the engine.
        public var maxBatchSize: Int
        /// Longest time the oldest request waits for others to join its batch.
        public var maxQueueDelayNanos: UInt64
        /// Requests waiting beyond this are refused with `queue_full`.
        public var maxQueueLength: Int

        public init(maxBatchSize: Int = 8, maxQueueDelayNanos: UInt64 = 2_000_000, maxQueueLength: Int = 256) {
            self.maxBatchSize = max(1, maxBatchSize)
            self.maxQueueDelayNanos = maxQueueDelayNanos
            self.maxQueueLength = max(1, maxQueueLength)
        }
    }

    public enum EnqueueDecision: Equatable, Sendable {
        case accepted
        case rejected(reason: String, retryAfterNanos: UInt64)
    }

    public enum Action: Equatable, Sendable {
        /// Run the `count` oldest requests as one batch now.
        case dispatch(count: Int)
        /// Nothing to run before this time (a worker sleeps until then or the next event).
        case waitUntil(UInt64)
        /// Queue empty or all workers busy: sleep until the next event.
        case idle
    }

    public let configuration: Configuration
    /// Enqueue times of waiting requests, oldest first.
    private var arrivals: [UInt64] = []
    private var head = 0
    /// Workers free to take a batch.
    public private(set) var idleWorkers: Int
    /// Exponential moving average of recent batch durations, for retry hints.
    public private(set) var recentBatchNanos: UInt64 = 0

    public init(configuration: Configuration, workers: Int = 1) {
        self.configuration = configuration
        self.idleWorkers = max(1, workers)
    }

    public var queueLength: Int { arrivals.count - head }

    public mutating func enqueue(now: UInt64) -> EnqueueDecision {
        if queueLength >= configuration.maxQueueLength {
            let batches = UInt64(max(1, queueLength / configuration.maxBatchSize))
            return .rejected(reason: "queue_full", retryAfterNanos: max(1_000_000, batches * max(recentBatchNanos, 1_000_000)))
        }
        arrivals.append(now)
        return .accepted
    }

    /// What a free worker should do at time `now`. A `dispatch` marks one worker busy.
    public mutating func next(now: UInt64) -> Action {
        guard queueLength > 0 else { return .idle }
        guard idleWorkers > 0 else { return .idle }
        let oldest = arrivals[head]
        let due = oldest &+ configuration.maxQueueDelayNanos
        if queueLength >= configuration.maxBatchSize || now >= due {
            let count = min(queueLength, configuration.maxBatchSize)
            head += count
            if head > 4096 && head * 2 > arrivals.count {
                arrivals.removeFirst(head)
                head = 0
            }
            idleWorkers -= 1
            return .dispatch(count: count)
        }
        return .waitUntil(due)
    }

    /// A worker finished a batch of `size` items that took `durationNanos`.
    public mutating func batchDone(size: Int, durationNanos: UInt64) {
        idleWorkers += 1
        recentBatchNanos = recentBatchNanos == 0 ? durationNanos : (recentBatchNanos * 7 + durationNanos) / 8
    }
}
