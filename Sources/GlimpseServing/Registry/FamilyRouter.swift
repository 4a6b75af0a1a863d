import Foundation

/// How a family's variants share its requests.
public enum SelectionMode: String, Sendable, CaseIterable {
    /// The most accurate variant up to its capacity, the excess to lighter ones (`VariantSplit`).
    case split
    /// One variant at a time, all or nothing, with hysteresis (`VariantSelector`).
    case `switch`
}

/// Turns the `model` of a request into the loaded variant that serves it, and says why.
///
/// `model` may name a variant exactly (served as asked, reason `requested`), a family (its variants
/// compete: an A/B split when one is set, else `VariantSplit`, or `VariantSelector` with
/// `--selection switch`), or `auto` (the default family).
final class FamilyRouter: @unchecked Sendable {
    private let lock = NSLock()
    private var states: [String: VariantSelector.State] = [:]
    private var splits: [String: VariantSplit.State] = [:]
    /// The variants (with the capacities) the last split of each family was computed from.
    private var splitInputs: [String: [VariantSplit.Variant]] = [:]
    /// Each variant's capacity estimate, smoothed over time (see `smoothedCapacity`).
    private var capacities: [String: (value: Double, at: UInt64)] = [:]
    /// Images per second asked of each family by name (requests that name a variant are not counted).
    private var rates: [String: ArrivalRate] = [:]
    private var traffic: [String: [(variant: String, weight: Int)]] = [:]
    /// Requests routed so far (all families, exact variants included) and the CPU each costs outside the engine.
    private var routed = 0
    /// The same, by the variant that served them.
    private var routedByVariant: [String: Int] = [:]
    private var overhead = RequestOverhead(cores: Double(max(1, ProcessInfo.processInfo.activeProcessorCount)))
    let policy: VariantSelector.Policy
    let selection: SelectionMode
    let splitPolicy: VariantSplit.Policy
    let metrics: ServingMetrics

    init(policy: VariantSelector.Policy = .init(), selection: SelectionMode = .split, splitPolicy: VariantSplit.Policy = .init(),
         metrics: ServingMetrics = .none) {
        self.policy = policy
        self.selection = selection
        self.splitPolicy = splitPolicy
        self.metrics = metrics
    }

    struct Route {
        var model: LoadedModel
        var reason: String
    }

    func route(_ requested: String, registry: ModelRegistry, deadlineNanos: UInt64?,
               minAccuracy: Double?, clientID: String?, images: Int = 1, now: UInt64) throws -> Route {
        let route = try choose(requested, registry: registry, deadlineNanos: deadlineNanos, minAccuracy: minAccuracy,
                               clientID: clientID, images: images, now: now)
        lock.lock()
        routedByVariant[route.model.name, default: 0] += max(1, images)
        lock.unlock()
        return route
    }

    private func choose(_ requested: String, registry: ModelRegistry, deadlineNanos: UInt64?,
                        minAccuracy: Double?, clientID: String?, images: Int, now: UInt64) throws -> Route {
        if let exact = registry.model(named: requested) {
            lock.lock()
            noteRequest(images: images, registry: registry, now: now)
            lock.unlock()
            if let minAccuracy, (exact.metadata.accuracy ?? -1) < minAccuracy {
                throw ServingError.badParameter("model \(requested) has \(exact.metadata.accuracy.map { "a measured accuracy of \($0)" } ?? "no measured accuracy"), below min_accuracy \(minAccuracy)")
            }
            return Route(model: exact, reason: "requested")
        }
        // `auto` was turned into the default model by `InferenceService.resolveDefault`.
        let all = registry.all
        let family = requested
        let variants = all.filter { $0.metadata.family == family }
        guard !variants.isEmpty else {
            let known = (Set(all.map(\.name)).union(all.map(\.metadata.family))).sorted().joined(separator: ", ")
            throw ServingError.unknownModel("unknown model \"\(requested)\"; loaded models and families: \(known.isEmpty ? "none" : known)")
        }
        let candidates = variants.map {
            VariantSelector.Candidate(name: $0.name, accuracy: $0.metadata.accuracy, predictedNanos: $0.queue.predictedWaitNanos(now: now),
                                      capacityPerSecond: $0.queue.capacityPerSecond)
        }
        lock.lock()
        defer { lock.unlock() }
        noteRequest(images: images, registry: registry, now: now)
        rates[family, default: ArrivalRate()].observe(count: images, now: now)
        let arrivalRate = rates[family]?.rate(at: now)
        if let arms = traffic[family], let arm = pickArm(arms, clientID: clientID),
           let model = variants.first(where: { $0.name == arm }),
           minAccuracy.map({ (model.metadata.accuracy ?? -1) >= $0 }) ?? true {
            let predicted = candidates.first { $0.name == arm }?.predictedNanos
            // The arm serves unless it is predicted to miss the deadline; then the selector decides.
            var missesDeadline = false
            if let deadline = deadlineNanos, let p = predicted { missesDeadline = p > deadline }
            if !missesDeadline { return Route(model: model, reason: "ab_split") }
        }
        if selection == .split {
            // Capacities end to end, each as if alone on the cores: what the cores sustain in CPU time,
            // the engine's CPU per item at full batches plus each request's CPU outside the engine.
            // Not the workers' recent batch times: while the family is split, the other variants'
            // workers share the cores and stretch them (see `FullBatchCost`). A variant predicted to
            // miss a deadline still passes its request on (`VariantSplit.select`).
            let split = variants.map { v -> VariantSplit.Variant in
                let cpu = v.queue.engineCPUNanosPerItem.flatMap { overhead.capacity(engineCPUNanosPerItem: $0, variant: v.name) }
                let capacity = (cpu ?? v.queue.aloneCapacityPerSecond).map { smoothedCapacity(v.name, $0, now: now) }
                return VariantSplit.Variant(name: v.name, accuracy: v.metadata.accuracy, capacityPerSecond: capacity,
                                            predictedNanos: candidates.first { $0.name == v.name }?.predictedNanos)
            }
            let previous = splits[family] ?? .init()
            guard let choice = VariantSplit.select(split, arrivalRate: arrivalRate, deadlineNanos: deadlineNanos, minAccuracy: minAccuracy,
                                                   clientID: clientID, state: previous, now: now, policy: splitPolicy),
                  let model = variants.first(where: { $0.name == choice.name }) else {
                throw noVariant(family, variants, minAccuracy)
            }
            splits[family] = choice.state
            splitInputs[family] = split
            if choice.state.shares != previous.shares {
                for s in choice.state.shares { metrics.splitShare(family: family, variant: s.name, share: s.share) }
            }
            return Route(model: model, reason: choice.reason.rawValue)
        }
        guard let choice = VariantSelector.select(candidates, deadlineNanos: deadlineNanos, minAccuracy: minAccuracy,
                                                  state: states[family] ?? .init(), now: now, arrivalRate: arrivalRate, policy: policy),
              let model = variants.first(where: { $0.name == choice.name }) else {
            throw noVariant(family, variants, minAccuracy)
        }
        states[family] = choice.state
        return Route(model: model, reason: choice.reason.rawValue)
    }

    /// A variant's capacity estimate, exponentially smoothed over time (about a second, as the arrival
    /// rate): the batch times it comes from move with every batch, and the split should follow the
    /// load, not that noise (under the lock).
    private func smoothedCapacity(_ name: String, _ raw: Double, now: UInt64) -> Double {
        guard let last = capacities[name], now > last.at else {
            if capacities[name] == nil { capacities[name] = (raw, now) }
            return capacities[name]?.value ?? raw
        }
        let w = 1 - exp(-Double(now - last.at) / 1e9)
        let value = last.value + w * (raw - last.value)
        capacities[name] = (value, now)
        return value
    }

    /// Counts a request (under the lock) and, once a window has passed, samples the CPU clocks.
    private func noteRequest(images: Int, registry: ModelRegistry, now: UInt64) {
        routed += max(1, images)
        guard selection == .split, overhead.isDue(now: now) else { return }
        let queues = registry.all.map(\.queue)
        // Engine CPU: the batches', and the engine threads' idle spinning, which is no request's cost.
        let engine = queues.reduce(UInt64(0)) { $0 &+ $1.engineCPUNanos &+ $1.engineThreadsIdleCPUNanos }
        let busy = queues.reduce(UInt64(0)) { $0 &+ $1.engineBusyNanos }
        let loaded = Set(registry.all.map(\.name))
        routedByVariant = routedByVariant.filter { loaded.contains($0.key) }
        overhead.keepVariants(only: loaded)
        overhead.observe(now: now, processCPU: CPUClock.process(), engineCPU: engine, engineBusy: busy, requests: routed,
                         requestsByVariant: routedByVariant)
    }

    /// Non-engine CPU nanoseconds per image request, as the split counts it (nil until measured).
    var overheadCPUNanosPerRequest: Double? { lock.withLock { overhead.cpuNanosPerRequest } }

    /// Each variant's own CPU per request outside the engine (ns), where windows have told it apart.
    var variantOverheadNanos: [String: Double] {
        lock.lock()
        defer { lock.unlock() }
        var out: [String: Double] = [:]
        for name in overhead.variants.names { out[name] = overhead.variants.overhead(of: name) }
        return out
    }

    /// Cores the process gets when it wants them all (`RequestOverhead.availableCores`).
    var availableCores: Double { lock.withLock { overhead.availableCores } }

    private func noVariant(_ family: String, _ variants: [LoadedModel], _ minAccuracy: Double?) -> ServingError {
        let best = variants.compactMap(\.metadata.accuracy).max()
        return ServingError.badParameter("no variant of \(family) meets min_accuracy \(minAccuracy ?? 0) (best measured: \(best.map { "\($0)" } ?? "none"))")
    }

    /// Per family: the split in force (variant → share), the arrival rate it follows (images per second,
    /// now) and the capacities it was computed from (images per second; 0 when unknown). Empty with
    /// `--selection switch`.
    func splitSnapshot(now: UInt64) -> [String: (shares: [String: Double], arrivalRate: Double, capacities: [String: Double])] {
        lock.lock()
        defer { lock.unlock() }
        var out: [String: (shares: [String: Double], arrivalRate: Double, capacities: [String: Double])] = [:]
        for (family, state) in splits {
            let capacities = Dictionary((splitInputs[family] ?? []).map { ($0.name, $0.capacityPerSecond ?? 0) }, uniquingKeysWith: { a, _ in a })
            out[family] = (Dictionary(uniqueKeysWithValues: state.shares.map { ($0.name, $0.share) }), rates[family]?.rate(at: now) ?? 0, capacities)
        }
        return out
    }

    /// Sets (or, with no weights, clears) the A/B split of a family: variant name → weight.
    func setTraffic(family: String, weights: [String: Int], registry: ModelRegistry) throws {
        let names = Set(registry.all.filter { $0.metadata.family == family }.map(\.name))
        guard !names.isEmpty else { throw ServingError.unknownModel("no loaded family \"\(family)\"") }
        for (name, weight) in weights {
            guard names.contains(name) else { throw ServingError.badParameter("\(name) is not a loaded variant of \(family) (variants: \(names.sorted().joined(separator: ", ")))") }
            guard weight >= 0, weight <= 1_000_000 else { throw ServingError.badParameter("weights must be integers from 0 to 1000000") }
        }
        lock.lock()
        defer { lock.unlock() }
        if weights.isEmpty || weights.values.allSatisfy({ $0 == 0 }) {
            traffic[family] = nil
        } else {
            traffic[family] = weights.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        }
    }

    func trafficSnapshot() -> [String: [String: Int]] {
        lock.lock()
        defer { lock.unlock() }
        return traffic.mapValues { Dictionary(uniqueKeysWithValues: $0.map { ($0.variant, $0.weight) }) }
    }

    /// The arm of a weighted split: a stable hash of `clientID` when given (the same client always
    /// lands on the same arm), else a random draw.
    func pickArm(_ arms: [(variant: String, weight: Int)], clientID: String?) -> String? {
        let total = arms.reduce(0) { $0 + $1.weight }
        guard total > 0 else { return nil }
        var ticket: Int
        if let clientID {
            var h: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
            for b in clientID.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
            ticket = Int(h % UInt64(total))
        } else {
            ticket = Int.random(in: 0..<total)
        }
        for arm in arms {
            if ticket < arm.weight { return arm.variant }
            ticket -= arm.weight
        }
        return arms.last?.variant
    }
}
