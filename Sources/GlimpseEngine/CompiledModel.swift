import GlimpseTensor

/// Options for compiling a graph into an executable model.
public struct EngineOptions: Sendable {
    /// Intra-op threads used by one `run` call.
    public var threads: Int
    /// Batch widening (opt-in): a graph whose every input declares a fixed batch of 1 is compiled
    /// with a dynamic batch when a check at load shows that this changes no result. Reshapes to a
    /// constant `[1, ...]` keep the batch instead, and the result is planned and run at batch 2 on
    /// pseudo-random items and compared with batch-1 runs of the same items. If planning or that
    /// check fails, the model stays fixed at batch 1. See `CompiledModel.widenedBatch`.
    public var widenFixedBatch: Bool
    /// How a batch of several items is run: as one batch, or split into single items that run side
    /// by side, one per thread. See `BatchSplitting`.
    public var batchSplitting: BatchSplitting
    /// Most bytes the loaded model's weights may take. The constants that nodes read are checked
    /// against it before the kernels allocate their packed copies of them (about the same size), so a
    /// small file that folds huge weights is refused before they are packed (nil: no limit).
    public var weightBudgetBytes: Int?
    /// Plans of a batch size (other than 1) that has not run for this many seconds are freed (see
    /// `PlanCache`); a later batch of that size plans again.
    public var idlePlanSeconds: Double
    public init(threads: Int = 1, widenFixedBatch: Bool = false, batchSplitting: BatchSplitting = .auto,
                weightBudgetBytes: Int? = nil, idlePlanSeconds: Double = 10) {
        self.threads = max(1, threads)
        self.widenFixedBatch = widenFixedBatch
        self.batchSplitting = batchSplitting
        self.weightBudgetBytes = weightBudgetBytes
        self.idlePlanSeconds = max(0, idlePlanSeconds)
    }
}

/// Batch splitting: a batch of n items can run as one batch-n plan, each operator spread over the
/// threads, or as n batch-1 runs, one per thread at a time, each single-threaded (items left over
/// after the last full round of threads run one by one on all threads). The split keeps each
/// item's activations in its own core's cache and needs no synchronisation inside the network;
/// a whole batch reads each weight once for all items. Which is faster depends on the model.
/// Splitting is used only for graphs whose items are independent, checked at load (see
/// `CompiledModel.checkItemsIndependent`).
public enum BatchSplitting: Sendable, Hashable {
    /// Time both ways on the first runs of each batch size and keep the faster.
    case auto
    /// Always split (when the check at load allows it).
    case always
    /// Never split: every batch runs as one.
    case never
}

/// Name, shape and element type of a model input or output. A dimension of -1 is dynamic (the batch).
public struct TensorSpec: Sendable, Hashable {
    public var name: String
    public var shape: [Int]
    public var dtype: DType
    public init(name: String, shape: [Int], dtype: DType) {
        self.name = name
        self.shape = shape
        self.dtype = dtype
    }
}

/// Engine errors: load-time problems (unsupported op, bad shapes) and run-time misuse (wrong input shape).
public struct EngineError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A load refused because the model's weights would not fit `EngineOptions.weightBudgetBytes`.
public struct WeightBudgetExceeded: Error, CustomStringConvertible, Sendable {
    public let model: String
    /// At least this many bytes: what the kernels' packed copies of the weights take.
    public let neededBytes: Int
    public let budgetBytes: Int
    public init(model: String, neededBytes: Int, budgetBytes: Int) {
        self.model = model
        self.neededBytes = neededBytes
        self.budgetBytes = budgetBytes
    }
    public var description: String {
        "\(model): its weights need at least \(Self.mib(neededBytes)), over the \(Self.mib(budgetBytes)) left in the memory budget"
    }
    public static func mib(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
}

/// A model ready to run: weights packed, plans cached per batch size.
///
/// CONTRACT (used by GlimpseServing): `run` is safe to call from several threads at once. Each call
/// takes a plan for its batch size from a lock-protected pool (building one the first time), so
/// concurrent calls never share buffers.
public final class CompiledModel: @unchecked Sendable {
    public let name: String
    /// Input specs. Dimension 0 is -1 (any batch) for a dynamic-batch graph and for a widened one.
    public let inputs: [TensorSpec]
    public let outputs: [TensorSpec]
    /// True when the graph declared a fixed batch of 1 and `EngineOptions.widenFixedBatch` made it
    /// dynamic (its input and output specs then report dimension 0 as -1).
    public let widenedBatch: Bool
    /// Remarks of the load-time passes, for the load log (which quantized nodes run in int8 and
    /// which were left in fp32, and why).
    public var loadNotes: [String] { graph.notes }
    /// Operators that run int8 kernels (convolutions, matrix products, adds, pools).
    public var int8Operators: Int {
        graph.nodes.filter { $0.op is Int8ConvOp || $0.op is Int8MatMulOp || $0.op is Int8AddOp || $0.op is Int8GlobalAveragePoolOp }.count
    }
    let graph: Graph
    /// CPU time used so far by this model's engine worker threads (the calling thread excluded).
    public func engineThreadsCPUNanos() -> UInt64 { pool.workerCPUTimeNanos() }

    let pool: ThreadPool
    /// Intra-op threads one `run` may use.
    public let threads: Int
    /// Floating-point operations per image (convolutions and matrix products, multiply-add = 2).
    public private(set) var flopsPerImage = 0
    let plans: Locked<PlanCache<ExecutionPlan>>
    /// Tensor bytes of the weights (packed, and the constants operators still read at run time) and of the execution plans
    /// (activation buffers and scratch, every batch size and copy cached), held now.
    public let weightMemory: MemoryLedger
    public let planMemory: MemoryLedger
    /// How batches of several items run (`EngineOptions.batchSplitting`).
    let batchSplitting: BatchSplitting
    /// True when the items of a batch were shown independent at load, so a batch may run as single
    /// items (always false for a graph fixed at batch 1, and when splitting is `.never`).
    public let itemsIndependent: Bool
    /// What a batch split into items on one thread still runs whole (nil: nothing).
    let batchTail: BatchTail?
    /// The tail a split batch on several threads joins at (the classifier's; nil: none).
    let parallelBatchTail: BatchTail?
    /// `.auto`'s trial state per batch size and thread count.
    let splitTuning = Locked<[SplitTuning.Key: SplitTuning]>([:])

    public init(name: String, inputs: [TensorSpec], outputs: [TensorSpec]) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.graph = Graph(name: name)
        self.threads = 1
        self.pool = .serial
        self.plans = Locked(PlanCache(idleNanos: 10_000_000_000))
        self.widenedBatch = false
        self.batchSplitting = .never
        self.itemsIndependent = false
        self.batchTail = nil
        self.parallelBatchTail = nil
        self.weightMemory = MemoryLedger()
        self.planMemory = MemoryLedger()
    }

    /// Compiles an optimized graph: checks it by planning batch 1 (and 2 when the batch is
    /// dynamic, or widened) and derives the output specs. `weightMemory` is the ledger the graph's
    /// constants and packed weights were charged to (see `ONNXLoader`), if any.
    public init(graph: Graph, options: EngineOptions, weightMemory: MemoryLedger = MemoryLedger()) throws {
        self.name = graph.name
        self.threads = options.threads
        let pool = ThreadPool(threads: options.threads)
        self.pool = pool
        self.plans = Locked(PlanCache(idleNanos: UInt64(options.idlePlanSeconds * 1e9)))
        self.weightMemory = weightMemory
        let planMemory = MemoryLedger()
        self.planMemory = planMemory
        let dynamic = graph.inputs.contains { $0.spec.shape.first == -1 }
        let plan1 = try planMemory.charging { try ExecutionPlan(graph: graph, batch: 1, threads: options.threads) }
        var plan2 = dynamic ? try planMemory.charging { try ExecutionPlan(graph: graph, batch: 2, threads: options.threads) } : nil
        var compiled = graph
        if !dynamic, options.widenFixedBatch,
           let wide = planMemory.charging({ Self.widenBatch(graph, batchOne: plan1, threads: options.threads, pool: pool) }) {
            compiled = wide.graph
            plan2 = wide.plan
        }
        self.graph = compiled
        self.widenedBatch = compiled !== graph
        self.batchSplitting = options.batchSplitting
        // A widened graph passed the same check on the way; a dynamic one is checked here.
        if widenedBatch {
            itemsIndependent = true
        } else if dynamic, options.batchSplitting != .never, let plan2 {
            itemsIndependent = Self.checkItemsIndependent(batch: plan2, batchOne: plan1,
                                                     inputTypes: graph.inputs.map { $0.spec.dtype }, pool: pool)
        } else {
            itemsIndependent = false
        }
        parallelBatchTail = itemsIndependent ? Self.classifierTail(of: compiled) : nil
        batchTail = itemsIndependent ? Self.smallPlaneTail(of: compiled, types: (widenedBatch ? plan2 : plan1)?.types ?? []) ?? parallelBatchTail : nil
        self.inputs = compiled.inputs.map { $0.spec }
        var outSpecs: [TensorSpec] = []
        for (i, out) in graph.outputs.enumerated() {
            var shape = plan1.outputTensors[i].shape.dims
            if let p2 = plan2 {
                let s2 = p2.outputTensors[i].shape.dims
                if s2.count == shape.count { for d in shape.indices where s2[d] != shape[d] { shape[d] = -1 } }
            }
            outSpecs.append(TensorSpec(name: graph.values[out.value].name, shape: shape, dtype: out.dtype))
        }
        self.outputs = outSpecs
        flopsPerImage = plan1.flops
        plans.withLock {
            let now = PlanClock.now()
            $0.put([plan1], batch: 1, now: now)
            if widenedBatch, let plan2 { $0.put([plan2], batch: plan2.batch, now: now) }  // the check's plan, reused
        }
    }

    /// Runs the model on a batch. `inputs[i]` matches `self.inputs[i]` with the dynamic batch dimension
    /// set. Returns one tensor per model output, batch first. With `parallel: false` the run stays on
    /// the calling thread (a caller that runs several batches side by side, one per core).
    public func run(_ inputs: [Tensor], parallel: Bool = true) throws -> [Tensor] {
        guard inputs.count == self.inputs.count else {
            throw EngineError("\(name): expected \(self.inputs.count) input(s), got \(inputs.count)")
        }
        guard !self.inputs.isEmpty else { throw EngineError("\(name): model has no inputs") }
        let batch = inputs[0].shape.rank > 0 ? inputs[0].shape[0] : 1
        for (t, spec) in zip(inputs, self.inputs) {
            guard t.shape.rank == spec.shape.count,
                  zip(t.shape.dims, spec.shape).allSatisfy({ $0.1 == -1 ? $0.0 == batch : $0.0 == $0.1 }) else {
                throw EngineError("\(name): input '\(spec.name)' must have shape \(spec.shape) (-1 = batch), got \(t.shape)")
            }
            guard t.dtype == spec.dtype else {
                throw EngineError("\(name): input '\(spec.name)' must be \(spec.dtype.rawValue), got \(t.dtype.rawValue)")
            }
        }
        guard batch >= 1 else { throw EngineError("\(name): empty batch") }
        let pool = parallel ? self.pool : .serial
        guard batch > 1, itemsIndependent, batchSplitting != .never else {
            return try runWhole(inputs, batch: batch, pool: pool)
        }
        return try runSplittable(inputs, batch: batch, pool: pool)
    }

    /// Runs the batch as one, on a plan for its size.
    func runWhole(_ inputs: [Tensor], batch: Int, pool: ThreadPool) throws -> [Tensor] {
        let plan = try takePlan(batch: batch)
        defer { putPlans([plan], batch: batch) }
        for (t, dst) in zip(inputs, plan.inputTensors) { TensorConversion.copy(t, into: dst) }
        plan.execute(pool)
        return zip(plan.outputTensors, graph.outputs).map { src, out in
            let result = Tensor(shape: src.shape, dtype: out.dtype)
            TensorConversion.copy(src, into: result)
            return result
        }
    }

    func takePlan(batch: Int) throws -> ExecutionPlan {
        if let plan = plans.withLock({ $0.take(batch: batch) }) { return plan }
        return try planMemory.charging { try ExecutionPlan(graph: graph, batch: batch, threads: threads) }
    }

    /// Frees the cached plans of every batch size not in `keeping` (plans in use by a run are not
    /// touched); a later batch of that size builds its plan again. A new version of a model calls it
    /// after its calibration runs, so that while the old version still serves, the new one holds its
    /// weights and one plan rather than a plan for every size it timed.
    public func releaseCachedPlans(keeping: Set<Int>) {
        plans.withLock { $0.release(keeping: keeping) }
    }

    /// Puts plans back after a run (and frees the plans of batch sizes idle for long, `PlanCache`).
    func putPlans(_ taken: [ExecutionPlan], batch: Int) {
        let now = PlanClock.now()
        plans.withLock { $0.put(taken, batch: batch, now: now) }
    }

    /// Execution plans cached now (all batch sizes; plans in use by a run are not counted).
    public var cachedPlans: Int { plans.withLock { $0.count } }

    /// Execution plans cached now, per batch size.
    public var cachedPlansBySize: [Int: Int] { plans.withLock { $0.countsBySize } }
}

/// float32 / float16 copies between user tensors and plan buffers.
enum TensorConversion {
    /// Copies item `item` of the batch `src` into the single-item `dst`.
    static func copy(_ src: Tensor, item: Int, into dst: Tensor) {
        let view = Tensor(shape: dst.shape, dtype: src.dtype, storage: src.storage,
                          byteOffset: src.byteOffset + item * dst.count * src.dtype.byteSize)
        copy(view, into: dst)
    }

    /// Copies the single-item `src` into item `item` of the batch `dst`.
    static func copy(_ src: Tensor, into dst: Tensor, item: Int) {
        let view = Tensor(shape: src.shape, dtype: dst.dtype, storage: dst.storage,
                          byteOffset: dst.byteOffset + item * src.count * dst.dtype.byteSize)
        copy(src, into: view)
    }

    static func copy(_ src: Tensor, into dst: Tensor) {
        let n = min(src.count, dst.count)
        switch (src.dtype, dst.dtype) {
        case (.float16, .float32):
            let s = src.rawPointer.assumingMemoryBound(to: UInt16.self), d = dst.f32
            for i in 0..<n { d[i] = Float(Float16(bitPattern: s[i])) }
        case (.float32, .float16):
            let s = src.f32, d = dst.rawPointer.assumingMemoryBound(to: UInt16.self)
            for i in 0..<n { d[i] = Float16(s[i]).bitPattern }
        default:
            dst.rawPointer.copyMemory(from: src.rawPointer, byteCount: min(src.byteCount, dst.byteCount))
        }
    }
}
