import GlimpseTensor

/// Batch splitting, the run half (`BatchSplitting`): a batch runs either whole or as single items
/// side by side, and under `.auto` the first runs of each batch size time both ways.
extension CompiledModel {
    /// Runs of one batch size that `.auto` spends timing both ways at least, and at most (when the two
    /// are close); a benchmark's warm-up runs until `splitsBatches(of:threads:)` has decided.
    public static let batchSplitTrialRuns = SplitTuning.trialRuns
    public static let batchSplitMaxTrialRuns = SplitTuning.maxTrialRuns

    /// The way batches of `batch` items run on `threads` threads, once `.auto` has timed both:
    /// true when split into single items, false when run whole (always so when the items were not
    /// shown independent at load), nil while undecided or for a batch of one.
    public func splitsBatches(of batch: Int, threads: Int) -> Bool? {
        guard batch > 1 else { return nil }
        guard itemsIndependent else { return false }
        switch batchSplitting {
        case .always: return true
        case .never: return false
        case .auto: return splitTuning.withLock { $0[SplitTuning.Key(batch: batch, threads: threads)]?.decision }
        }
    }

    /// Runs a batch of several independent items the way the policy picks.
    func runSplittable(_ inputs: [Tensor], batch: Int, pool: ThreadPool) throws -> [Tensor] {
        if batchSplitting == .always { return try runSplit(inputs, batch: batch, pool: pool) }
        let key = SplitTuning.Key(batch: batch, threads: pool.threads)
        let (split, timed) = splitTuning.withLock { $0[key, default: SplitTuning()].nextRun() }
        guard timed else {
            return try split ? runSplit(inputs, batch: batch, pool: pool) : runWhole(inputs, batch: batch, pool: pool)
        }
        let clock = ContinuousClock()
        let start = clock.now
        let outputs = try split ? runSplit(inputs, batch: batch, pool: pool) : runWhole(inputs, batch: batch, pool: pool)
        let elapsed = clock.now - start
        splitTuning.withLock { $0[key, default: SplitTuning()].record(split: split, elapsed: elapsed) }
        return outputs
    }

    /// Runs the items on batch-1 plans: full rounds side by side, one single-threaded item per
    /// thread; the items left over one after another, each on all threads. With a `BatchTail`, the
    /// items stop where it starts, and the tail runs once for the whole batch on a plan for its size.
    func runSplit(_ inputs: [Tensor], batch: Int, pool: ThreadPool) throws -> [Tensor] {
        let lanes = min(pool.threads, batch)
        let sideBySide = batch / lanes * lanes
        var taken: [ExecutionPlan] = []
        defer { putPlans(taken, batch: 1) }
        for _ in 0..<lanes { taken.append(try takePlan(batch: 1)) }
        // A tail where the planes become small is for one thread: on several, its many small
        // operators spread over the threads cost more than running it whole saves.
        let batchTail = pool.threads > 1 ? parallelBatchTail : self.batchTail
        let whole = try batchTail.map { _ in try takePlan(batch: batch) }
        defer { if let whole { putPlans([whole], batch: batch) } }
        // The tail, its plan and the tensor there that receives each item's input to it, when every
        // plan has a buffer for that value (else the items run to the end on their own).
        var join: (tail: BatchTail, whole: ExecutionPlan, wide: Tensor)?
        if let tail = batchTail, let whole, let wide = whole.tensor(of: tail.value),
           taken.allSatisfy({ $0.tensor(of: tail.value) != nil }) {
            join = (tail, whole, wide)
        }
        let results: [Tensor] = zip(taken[0].outputTensors, graph.outputs).map { one, out in
            var dims = one.shape.dims
            dims[0] = batch
            return Tensor(shape: Shape(dims), dtype: out.dtype)
        }
        func runItem(_ item: Int, on plan: ExecutionPlan, pool: ThreadPool) {
            for (t, dst) in zip(inputs, plan.inputTensors) { TensorConversion.copy(t, item: item, into: dst) }
            if let join, let cut = plan.tensor(of: join.tail.value) {
                plan.execute(pool, kernels: 0..<plan.kernels(from: join.tail.node).lowerBound)
                TensorConversion.copy(cut, into: join.wide, item: item)
                return
            }
            plan.execute(pool)
            for (src, dst) in zip(plan.outputTensors, results) { TensorConversion.copy(src, into: dst, item: item) }
        }
        pool.parallelTasks(sideBySide) { item, thread in runItem(item, on: taken[thread], pool: .serial) }
        for item in sideBySide..<batch { runItem(item, on: taken[0], pool: pool) }
        if let join {
            join.whole.execute(pool, kernels: join.whole.kernels(from: join.tail.node))
            for (src, dst) in zip(join.whole.outputTensors, results) { TensorConversion.copy(src, into: dst) }
        }
        return results
    }

    /// Where a split batch on one thread joins again (see `BatchTail`): the earliest node from which
    /// on every value made has a plane of at most `BatchTail.maxPlanePixels` pixels, and where one
    /// value alone passes from the nodes before it to it and the rest. `types` are the value types of
    /// a plan of the graph.
    static func smallPlaneTail(of graph: Graph, types: [ValueType?]) -> BatchTail? {
        let count = graph.nodes.count
        func small(_ v: Int) -> Bool {
            guard v < types.count, let t = types[v] else { return false }
            return t.shape.count != 4 || t.shape[2] * t.shape[3] <= BatchTail.maxPlanePixels
        }
        // Node start − 1 makes a large plane (else there is nothing for the items to run apart).
        var start = count
        while start > 0, graph.nodes[start - 1].outputs.allSatisfy(small) { start -= 1 }
        guard start > 0, start < count else { return nil }
        var lastUse: [Int: Int] = [:]
        for (i, n) in graph.nodes.enumerated() {
            for v in n.inputs where v != Graph.noValue && !graph.isConstant(v) { lastUse[v] = i }
        }
        for out in graph.outputs { lastUse[out.value] = count }
        var live = Set(graph.inputs.map(\.value).filter { lastUse[$0] != nil })
        for i in 0..<count {
            live = live.filter { (lastUse[$0] ?? -1) >= i }
            if i >= start, live.count == 1, let value = live.first, graph.nodes[i].inputs.contains(value) {
                return BatchTail(node: i, value: value)
            }
            for o in graph.nodes[i].outputs where lastUse[o] != nil { live.insert(o) }
        }
        return nil
    }

    /// Where a split batch joins again on several threads (and on one when the planes never become
    /// small): the last fully connected layer with large weights, when its input is all the graph
    /// before it passes on.
    static func classifierTail(of graph: Graph) -> BatchTail? {
        guard let node = graph.nodes.lastIndex(where: { n in
            guard n.op is GemmOp, n.inputs.count >= 2, n.inputs[0] != Graph.noValue, !graph.isConstant(n.inputs[0]),
                  let weights = graph.constantType(n.inputs[1]) else { return false }
            return weights.shape.reduce(1, *) >= BatchTail.minWeights
        }) else { return nil }
        let value = graph.nodes[node].inputs[0]
        // The values made before the tail (graph inputs included) that the tail or the graph's
        // outputs read must be the layer's input alone.
        var before = Set(graph.inputs.map(\.value))
        for n in graph.nodes[..<node] { before.formUnion(n.outputs) }
        var crossing = Set<Int>()
        for n in graph.nodes[node...] { for v in n.inputs where before.contains(v) { crossing.insert(v) } }
        for out in graph.outputs where before.contains(out.value) { crossing.insert(out.value) }
        guard crossing == [value] else { return nil }
        return BatchTail(node: node, value: value)
    }
}

/// The end of a graph that a split batch still runs whole: from its last fully connected layer
/// with large weights (`minWeights` floats or more), when that layer's input is all the rest of
/// the graph passes on. Run per item, such a layer streams its weights from memory for every
/// item (MobileNetV2's 1280 × 1000 weights, 5 MB, took 165 µs per item on one thread, about 3 %
/// of the item); in a run of the whole batch of 8, 65 µs per item.
struct BatchTail: Sendable {
    /// Fewest weights (1 MB of floats) for which a layer is worth a plan for the whole batch.
    static let minWeights = 1 << 18
    /// Largest plane (pixels) of a small-plane tail: 7×7. Measured at batch 8 on one thread, split,
    /// against no such tail: mobilenetv2-int8 −2.8%, efficientnet_b0 −2.9%, mobilenet_v2 level; with
    /// 14×14 (196) squeezenet1.1 lost 1–6% and mobilenetv2-int8 gained nothing.
    static let maxPlanePixels = 49
    /// Index of the layer's node, where the tail starts.
    let node: Int
    /// The layer's input: each item's is copied into the batch's plan.
    let value: Int
}

/// `.auto`'s trial for one batch size and thread count. Runs alternate split and whole until each
/// way has `timedRunsPerWay` timed runs; the way with the shorter best run is kept. When the two
/// bests are within `closeRatio` of each other, the trial goes on, up to `maxTimedRunsPerWay` each:
/// with three runs a way, a slow phase of the host that caught the faster way's runs once picked
/// the way 7–10% slower (mobilenetv2-int8, batch 8, two threads). The first run of each way is not
/// timed: it builds plans and first touches their memory.
struct SplitTuning: Sendable {
    struct Key: Hashable, Sendable {
        var batch: Int
        var threads: Int
    }

    static let timedRunsPerWay = 3
    static let maxTimedRunsPerWay = 8
    /// Bests closer than this ratio need more runs to tell apart.
    static let closeRatio = 1.15
    /// Runs of one batch size before the choice can be fixed (when runs do not overlap).
    static let trialRuns = 2 * (timedRunsPerWay + 1)
    /// Runs of one batch size by which the choice is fixed.
    static let maxTrialRuns = 2 * (maxTimedRunsPerWay + 1)

    private var started = 0
    private var bestSplit: Duration?
    private var bestWhole: Duration?
    private var timedSplit = 0
    private var timedWhole = 0
    private(set) var decision: Bool?

    /// The way the next run goes, and whether it is timed.
    mutating func nextRun() -> (split: Bool, timed: Bool) {
        if let decision { return (decision, false) }
        defer { started += 1 }
        return (started % 2 == 0, started >= 2)
    }

    mutating func record(split: Bool, elapsed: Duration) {
        guard decision == nil else { return }
        if split {
            bestSplit = min(bestSplit ?? elapsed, elapsed)
            timedSplit += 1
        } else {
            bestWhole = min(bestWhole ?? elapsed, elapsed)
            timedWhole += 1
        }
        let runs = min(timedSplit, timedWhole)
        guard runs >= Self.timedRunsPerWay, let bestSplit, let bestWhole else { return }
        let (a, b) = (bestSplit / .nanoseconds(1), bestWhole / .nanoseconds(1))
        let close = max(a, b) < Self.closeRatio * min(a, b)
        if !close || runs >= Self.maxTimedRunsPerWay { decision = bestSplit < bestWhole }
    }
}
