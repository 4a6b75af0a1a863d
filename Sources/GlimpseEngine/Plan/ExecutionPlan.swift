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

    init(graph: Graph, batch: Int, threads: Int) throws {
        self.batch = batch
        let count = graph.values.count
        var types = [ValueType?](repeating: nil, count: count)
        var known = [Tensor?](repeating: nil, count: count)
        for (i, v) in graph.values.enumerated() where v.constant != nil {
            known[i] = v.constant
            types[i] = ValueType(v.constant!.shape.dims, v.constant!.dtype)
        }
        for input in graph.inputs {
            let shape = input.spec.shape.map { $0 < 0 ? batch : $0 }
            types[input.value] = ValueType(shape, .float32)
        }
        // 1. Types, and folding of values that only depend on constants and shapes.
        var live: [Int] = []   // nodes that run
        for (index, node) in graph.nodes.enumerated() {
            let inTypes: [ValueType] = try node.inputs.map { v in
                if v == Graph.noValue { return .absent }
                guard let t = types[v] else {
                    throw EngineError("\(graph.name): \(node.label) reads '\(graph.values[v].name)', which no node produces")
                }
                return t
            }
            let consts = node.inputs.map { $0 == Graph.noValue ? nil : known[$0] }
            do {
                let allConst = zip(node.inputs, consts).allSatisfy { $0.0 == Graph.noValue || $0.1 != nil }
                if allConst || node.op.foldFromTypes(inTypes) != nil {
                    let outs = try allConst
                        ? Evaluator.evaluate(node.op, inputs: consts, label: node.label)
                        : node.op.foldFromTypes(inTypes)!
                    for (o, t) in zip(node.outputs, outs) {
                        known[o] = t
                        types[o] = ValueType(t.shape.dims, t.dtype)
                    }
                    continue
                }
                let outTypes = try node.op.inferTypes(inTypes, constants: consts)
                // Optional outputs an operator does not produce (Dropout's mask) stay undefined;
                // reading one fails below with the value's name.
                for (o, t) in zip(node.outputs, outTypes) { types[o] = t }
                live.append(index)
            } catch let e as EngineError {
                throw EngineError("\(graph.name): \(node.label): \(e.description) (inputs \(inTypes))")
            }
        }
        self.types = types

        // 2. Buffers: views share their source's buffer; buffers are reused once dead.
        var root = Array(0..<count)
        for i in live where graph.nodes[i].op.isView {
            let n = graph.nodes[i]
            if known[n.inputs[0]] == nil { root[n.outputs[0]] = root[n.inputs[0]] }
        }
        let (byteOffset, elided) = Self.elideConcats(graph, live: live, types: types, known: known, root: &root)
        var lastUse = [Int](repeating: -1, count: count)
        for (pos, i) in live.enumerated() {
            for v in graph.nodes[i].inputs where v != Graph.noValue { lastUse[root[v]] = max(lastUse[root[v]], pos) }
        }
        for o in graph.outputs { lastUse[root[o.value]] = Int.max }
        for inp in graph.inputs { lastUse[root[inp.value]] = Int.max }

        var slotSize: [Int] = []
        var slotOf = [Int](repeating: -1, count: count)
        var free: [Int] = []
        func bytes(_ v: Int) -> Int { (types[v]?.count ?? 0) * (types[v]?.dtype.byteSize ?? 4) }
        func assign(_ v: Int) {
            let need = bytes(v)
            var best = -1
            for (j, s) in free.enumerated() where slotSize[s] >= need {
                if best < 0 || slotSize[s] < slotSize[free[best]] { best = j }
            }
            if best < 0, let largest = free.indices.max(by: { slotSize[free[$0]] < slotSize[free[$1]] }) {
                best = largest
                slotSize[free[best]] = need
            }
            if best >= 0 {
                slotOf[v] = free.remove(at: best)
            } else {
                slotSize.append(need)
                slotOf[v] = slotSize.count - 1
            }
        }
        for inp in graph.inputs { assign(inp.value) }
        for (pos, i) in live.enumerated() {
            let n = graph.nodes[i]
            var released = Set<Int>()
            // An output that takes over the buffer of an input read here for the last time
            // (`Operator.inPlaceInput`; a ResNet block's shortcut, overwritten by its sum).
            if n.outputs.count == 1, let o = n.outputs.first, root[o] == o, known[o] == nil, slotOf[o] < 0,
               let j = n.op.inPlaceInput(n.inputs.map { $0 == Graph.noValue ? .absent : (types[$0] ?? .absent) }),
               j < n.inputs.count, case let v = n.inputs[j], v != Graph.noValue, known[v] == nil, root[v] == v,
               slotOf[v] >= 0, lastUse[v] == pos, bytes(v) == bytes(o), byteOffset[v] == 0,
               n.inputs.filter({ $0 == v }).count == 1 {
                slotOf[o] = slotOf[v]
                released.insert(v)
            }
            // A value's buffer is its root's: its own, a view's source, or (for an elided concat's
            // input) the concat's output, assigned when its first input is produced.
            for o in n.outputs where known[o] == nil && slotOf[root[o]] < 0 { assign(root[o]) }
            for v in n.inputs where v != Graph.noValue && known[v] == nil {
                let r = root[v]
                if lastUse[r] == pos, slotOf[r] >= 0, !released.contains(r) {
                    released.insert(r)
                    free.append(slotOf[r])
                }
            }
            for o in n.outputs where root[o] == o && known[o] == nil && lastUse[o] < pos {
                free.append(slotOf[o])  // produced but never read
            }
        }
        let storages = slotSize.map { TensorStorage(byteCount: max($0, 4)) }
        var tensors = [Tensor?](repeating: nil, count: count)
        func tensor(_ v: Int) -> Tensor? {
            if let k = known[v] { return k }
            if let t = tensors[v] { return t }
            guard let type = types[v], slotOf[root[v]] >= 0 else { return nil }
            let t = Tensor(shape: Shape(type.shape), dtype: type.dtype, storage: storages[slotOf[root[v]]],
                           byteOffset: byteOffset[v])
            tensors[v] = t
            return t
        }

        // 3. Kernels.
        var wsFloats = 0
        var flops = 0
        for i in live {
            let n = graph.nodes[i]
            let inT = n.inputs.map { $0 == Graph.noValue ? ValueType.absent : (types[$0] ?? .absent) }
            let outT = n.outputs.compactMap { types[$0] }
            wsFloats = max(wsFloats, n.op.workspaceFloats(inT, outT, threads: threads))
            flops += n.op.flops(inT, outT)
        }
        self.flops = flops
        self.elidedConcats = elided.count
        let workspace = TensorStorage(byteCount: max(wsFloats, 16) * 4 + 64)
        var kernels: [any Kernel] = []
        var labels: [String] = []
        var nodeKernel = [Int](repeating: 0, count: graph.nodes.count + 1)
        var nextNode = 0
        for i in live {
            while nextNode <= i { nodeKernel[nextNode] = kernels.count; nextNode += 1 }
            let n = graph.nodes[i]
            if n.op.isView || elided.contains(i) { continue }
            let ctx = KernelContext(
                inputs: n.inputs.map { $0 == Graph.noValue ? nil : tensor($0) },
                outputs: n.outputs.compactMap { tensor($0) },
                workspace: workspace.bytes.assumingMemoryBound(to: Float.self), threads: threads)
            do {
                kernels.append(try n.op.makeKernel(ctx))
                if OpProfiler.enabled {
                    let inT = n.inputs.map { $0 == Graph.noValue ? ValueType.absent : (types[$0] ?? .absent) }
                    let outT = n.outputs.compactMap { types[$0] }
                    labels.append(OpProfiler.label(n.op, ctx, flops: n.op.flops(inT, outT)))
                } else {
                    labels.append(n.op.opType)
                }
            } catch let e as EngineError {
                throw EngineError("\(graph.name): \(n.label): \(e.description)")
            }
        }
        while nextNode <= graph.nodes.count { nodeKernel[nextNode] = kernels.count; nextNode += 1 }
        self.kernels = kernels
        self.nodeKernel = nodeKernel
        self.valueTensors = (0..<count).map { tensor($0) }
        self.kernelLabels = labels
        self.storages = storages
        self.workspace = workspace
        self.inputTensors = try graph.inputs.map { inp in
            guard let t = tensor(inp.value) else { throw EngineError("\(graph.name): input '\(inp.spec.name)' has no buffer") }
            return t
        }
        self.outputTensors = try graph.outputs.map { out in
            guard let t = tensor(out.value) else {
                throw EngineError("\(graph.name): output '\(graph.values[out.value].name)' is never computed")
            }
            return t
        }
    }

    /// Concatenations along an axis with nothing but size-1 dimensions before it (channels at
    /// batch 1) become no copy at all: each input is written straight into its slice of the
    /// output. That needs every input to be an operator's own output (not a view, constant, graph
    /// input or output, or another concatenation), read by this concatenation alone. Sets `root` of
    /// each such input to the output and returns the inputs' byte offsets in it and the elided nodes.
    private static func elideConcats(_ graph: Graph, live: [Int], types: [ValueType?], known: [Tensor?],
                                     root: inout [Int]) -> (byteOffset: [Int], elided: Set<Int>) {
        let count = graph.values.count
        var byteOffset = [Int](repeating: 0, count: count)
        var elided = Set<Int>()
        var readers = [Int](repeating: 0, count: count)
        var producer = [Int](repeating: -1, count: count)
        for i in live {
            for v in graph.nodes[i].inputs where v != Graph.noValue { readers[v] += 1 }
            for o in graph.nodes[i].outputs { producer[o] = i }
        }
        for o in graph.outputs { readers[o.value] += 1 }
        let graphInputs = Set(graph.inputs.map(\.value))
        var viewed = Set<Int>()
        for v in 0..<count where root[v] != v { viewed.insert(root[v]) }
        for i in live {
            let n = graph.nodes[i]
            guard let concat = n.op as? ConcatOp, n.outputs.count == 1, let outType = types[n.outputs[0]],
                  let axis = try? concat.normalizedAxis(outType.shape.count),
                  outType.shape[..<axis].reduce(1, *) == 1 else { continue }
            let out = n.outputs[0]
            let fits = !n.inputs.isEmpty && Set(n.inputs).count == n.inputs.count && n.inputs.allSatisfy { v in
                guard v != Graph.noValue, known[v] == nil, !graphInputs.contains(v), root[v] == v, !viewed.contains(v),
                      readers[v] == 1, producer[v] >= 0, types[v]?.dtype == outType.dtype else { return false }
                let op = graph.nodes[producer[v]].op
                return !op.isView && !(op is ConcatOp)
            }
            guard fits, root[out] == out else { continue }
            var offset = 0
            for v in n.inputs {
                root[v] = out
                byteOffset[v] = offset
                offset += (types[v]?.count ?? 0) * outType.dtype.byteSize
            }
            elided.insert(i)
        }
        return (byteOffset, elided)
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
