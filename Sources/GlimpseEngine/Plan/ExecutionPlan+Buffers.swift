import GlimpseTensor

/// Step 2 of planning: which buffer (slot) holds each value. Views share their source's buffer,
/// elided concatenations' inputs are slices of the output's, and a buffer is reused once its value
/// is dead.
struct PlanBuffers {
    /// The value whose buffer each value uses (itself, a view's source, an elided concat's output).
    var root: [Int]
    /// Byte offset of each value in its root's buffer.
    var byteOffset: [Int]
    /// Concatenation nodes that run no kernel.
    var elided: Set<Int>
    /// Slot of each root value (-1: none), and each slot's size in bytes.
    var slotOf: [Int]
    var slotSize: [Int]
}

/// The tensors over a plan's buffers, made once per value.
struct TensorTable {
    let shapes: PlanShapes
    let buffers: PlanBuffers
    let storages: [TensorStorage]
    private var made: [Tensor?]

    init(shapes: PlanShapes, buffers: PlanBuffers, storages: [TensorStorage]) {
        self.shapes = shapes
        self.buffers = buffers
        self.storages = storages
        made = [Tensor?](repeating: nil, count: shapes.types.count)
    }

    mutating func tensor(_ v: Int) -> Tensor? {
        if let k = shapes.known[v] { return k }
        if let t = made[v] { return t }
        let slot = buffers.slotOf[buffers.root[v]]
        guard let type = shapes.types[v], slot >= 0 else { return nil }
        let t = Tensor(shape: Shape(type.shape), dtype: type.dtype, storage: storages[slot], byteOffset: buffers.byteOffset[v])
        made[v] = t
        return t
    }
}

extension ExecutionPlan {
    static func assignBuffers(_ graph: Graph, _ shapes: PlanShapes) -> PlanBuffers {
        let (types, known, live) = (shapes.types, shapes.known, shapes.live)
        let count = graph.values.count
        var root = Array(0..<count)
        for i in live where graph.nodes[i].op.isView {
            let n = graph.nodes[i]
            if known[n.inputs[0]] == nil { root[n.outputs[0]] = root[n.inputs[0]] }
        }
        let (byteOffset, elided) = elideConcats(graph, live: live, types: types, known: known, root: &root)
        var lastUse = [Int](repeating: -1, count: count)
        for (pos, i) in live.enumerated() {
            for v in graph.nodes[i].inputs where v != Graph.noValue { lastUse[root[v]] = max(lastUse[root[v]], pos) }
        }
        for o in graph.outputs { lastUse[root[o.value]] = Int.max }
        for inp in graph.inputs { lastUse[root[inp.value]] = Int.max }

        var slots = SlotAllocator(count: count)
        func bytes(_ v: Int) -> Int { (types[v]?.count ?? 0) * (types[v]?.dtype.byteSize ?? 4) }
        for inp in graph.inputs { slots.assign(inp.value, bytes: bytes(inp.value)) }
        for (pos, i) in live.enumerated() {
            let n = graph.nodes[i]
            var released = Set<Int>()
            // An output that takes over the buffer of an input read here for the last time
            // (`Operator.inPlaceInput`; a ResNet block's shortcut, overwritten by its sum).
            if n.outputs.count == 1, let o = n.outputs.first, root[o] == o, known[o] == nil, slots.slotOf[o] < 0,
               let j = n.op.inPlaceInput(n.inputs.map { $0 == Graph.noValue ? .absent : (types[$0] ?? .absent) }),
               j < n.inputs.count, case let v = n.inputs[j], v != Graph.noValue, known[v] == nil, root[v] == v,
               slots.slotOf[v] >= 0, lastUse[v] == pos, bytes(v) == bytes(o), byteOffset[v] == 0,
               n.inputs.filter({ $0 == v }).count == 1 {
                slots.slotOf[o] = slots.slotOf[v]
                released.insert(v)
            }
            // A value's buffer is its root's: its own, a view's source, or (for an elided concat's
            // input) the concat's output, assigned when its first input is produced.
            for o in n.outputs where known[o] == nil && slots.slotOf[root[o]] < 0 { slots.assign(root[o], bytes: bytes(root[o])) }
            for v in n.inputs where v != Graph.noValue && known[v] == nil {
                let r = root[v]
                if lastUse[r] == pos, slots.slotOf[r] >= 0, !released.contains(r) {
                    released.insert(r)
                    slots.free.append(slots.slotOf[r])
                }
            }
            for o in n.outputs where root[o] == o && known[o] == nil && lastUse[o] < pos {
                slots.free.append(slots.slotOf[o])  // produced but never read
            }
        }
        return PlanBuffers(root: root, byteOffset: byteOffset, elided: elided, slotOf: slots.slotOf, slotSize: slots.slotSize)
    }

    /// Concatenations along an axis with nothing but size-1 dimensions before it (channels at
    /// batch 1) become no copy at all: each input is written straight into its slice of the
    /// output. That needs every input to be an operator's own output (not a view, constant, graph
    /// input or output, or another concatenation), read by this concatenation alone. Sets `root` of
    /// each such input to the output and returns the inputs' byte offsets in it and the elided nodes.
    static func elideConcats(_ graph: Graph, live: [Int], types: [ValueType?], known: [Tensor?],
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
}

/// Buffer slots: a value takes the smallest free slot that fits, else the largest free one (grown),
/// else a new one.
struct SlotAllocator {
    var slotSize: [Int] = []
    var slotOf: [Int]
    var free: [Int] = []

    init(count: Int) { slotOf = [Int](repeating: -1, count: count) }

    mutating func assign(_ v: Int, bytes need: Int) {
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
}
