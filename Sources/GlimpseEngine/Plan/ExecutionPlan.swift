import GlimpseTensor

/// Everything needed to run a graph for one batch size: concrete shapes, buffers assigned by
/// liveness, scratch, and bound kernels. Built once per batch size; `execute` allocates nothing.
/// A plan is used by one thread at a time (`CompiledModel` keeps a pool of them).
final class ExecutionPlan {
    let batch: Int
    let inputTensors: [Tensor]
    let outputTensors: [Tensor]
    private let kernels: [any Kernel]
    /// Index of the first kernel of graph node i (or of the next node that has one); one more entry
    /// for the end of the graph.
    private let nodeKernel: [Int]
    /// The tensor of every value that has one (constants, and values given buffers).
    private let valueTensors: [Tensor?]
    /// Label of each kernel ("Conv 3x3 s1 g1 64->64 56x56" etc.) for the optional profiler.
    private let kernelLabels: [String]
    private let storages: [TensorStorage]
    private let workspace: TensorStorage

    /// Floating-point operations of one execution (convolutions and matrix products).
    let flops: Int

    /// Concatenations whose inputs are written in place, so they run no kernel (`elideConcats`).
    let elidedConcats: Int

    /// Types of every value for this batch size (nil where unreachable).
    let types: [ValueType?]

    /// Plans `graph` for `batch`: shape inference (and folding), buffer assignment by liveness, then
    /// kernel binding.
    init(graph: Graph, batch: Int, threads: Int) throws {
        self.batch = batch
        let shapes = try Self.inferShapes(graph, batch: batch)
        self.types = shapes.types
        let buffers = Self.assignBuffers(graph, shapes)
        let storages = buffers.slotSize.map { TensorStorage(byteCount: max($0, 4)) }
        var tensors = TensorTable(shapes: shapes, buffers: buffers, storages: storages)
        let bound = try Self.bindKernels(graph, shapes: shapes, elided: buffers.elided, threads: threads) { tensors.tensor($0) }
        self.flops = bound.flops
        self.elidedConcats = buffers.elided.count
        self.kernels = bound.kernels
        self.nodeKernel = bound.nodeKernel
        self.kernelLabels = bound.labels
        self.workspace = bound.workspace
        self.valueTensors = (0..<graph.values.count).map { tensors.tensor($0) }
        self.storages = storages
        self.inputTensors = try graph.inputs.map { inp in
            guard let t = tensors.tensor(inp.value) else { throw EngineError("\(graph.name): input '\(inp.spec.name)' has no buffer") }
            return t
        }
        self.outputTensors = try graph.outputs.map { out in
            guard let t = tensors.tensor(out.value) else {
                throw EngineError("\(graph.name): output '\(graph.values[out.value].name)' is never computed")
            }
            return t
        }
    }

    func execute(_ pool: ThreadPool) {
        execute(pool, kernels: 0..<kernels.count)
    }

    /// Runs the kernels `range` only (see `kernels(from:)`).
    func execute(_ pool: ThreadPool, kernels range: Range<Int>) {
        if OpProfiler.enabled {
            for i in range {
                let t0 = OpProfiler.now()
                kernels[i].run(pool)
                OpProfiler.shared.record(kernelLabels[i], OpProfiler.now() - t0)
            }
            return
        }
        for i in range { kernels[i].run(pool) }
    }

    /// The kernels of graph nodes `node...` to the end of the graph.
    func kernels(from node: Int) -> Range<Int> { nodeKernel[node]..<kernels.count }

    /// The tensor holding `value` in this plan (nil for a value that is never computed).
    func tensor(of value: Int) -> Tensor? { valueTensors[value] }
}
