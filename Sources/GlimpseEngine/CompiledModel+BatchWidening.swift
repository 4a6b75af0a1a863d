import GlimpseTensor

/// Batch widening, the verification half (`EngineOptions.widenFixedBatch`).
///
/// A graph that declares a fixed batch of 1 is rewritten by `WidenBatch`, planned at batch 2 and run
/// on two deterministic pseudo-random items; each item of the batch-2 result must match a batch-1 run
/// of the original graph on that item (`checkItemsIndependent`). Anything else, including a plan
/// that cannot be built, leaves the model at fixed batch 1.
/// Cost at load: a batch-2 plan (kept for later batch-2 runs), one batch-2 run and two batch-1 runs;
/// the batch-1 runs are skipped when the batch-2 items come out identical (the check could not
/// tell a mixed batch from a right one, so it refuses).
extension CompiledModel {
    /// The batch size the check runs.
    static let wideningCheckBatch = 2
    /// Largest tolerated |widened − reference|, relative to the reference's largest magnitude.
    static let wideningTolerance: Float = 1e-5

    /// The widened graph and its batch-2 plan, or nil when widening does not apply or fails the check.
    static func widenBatch(_ graph: Graph, batchOne: ExecutionPlan, threads: Int, pool: ThreadPool)
        -> (graph: Graph, plan: ExecutionPlan)?
    {
        guard WidenBatch.isCandidate(graph) else { return nil }
        let wide = WidenBatch.widened(graph, batchOneTypes: batchOne.types)
        let batch = wideningCheckBatch
        guard let plan = try? ExecutionPlan(graph: wide, batch: batch, threads: threads) else { return nil }
        guard checkItemsIndependent(batch: plan, batchOne: batchOne, inputTypes: graph.inputs.map { $0.spec.dtype },
                               pool: pool) else { return nil }
        return (wide, plan)
    }

    /// The check shared by widening and batch splitting: `plan` (batch ≥ 2) and `batchOne` are run on
    /// deterministic pseudo-random items, and each item of the batch result must match the batch-1
    /// run of that item (max |Δ| ≤ `wideningTolerance` × max |reference|, NaN where the reference has
    /// NaN). When the items come out identical the check cannot tell a batch that swaps or mixes
    /// items from a right one, so it refuses. Outputs must be batch-major, inputs float32 buffers.
    static func checkItemsIndependent(batch plan: ExecutionPlan, batchOne: ExecutionPlan, inputTypes: [DType],
                                 pool: ThreadPool) -> Bool
    {
        let batch = plan.batch
        guard batch >= 2, batchOne.batch == 1, inputTypes.count == batchOne.inputTensors.count else { return false }
        for (one, many) in zip(batchOne.outputTensors, plan.outputTensors) {
            let d1 = one.shape.dims, dn = many.shape.dims
            guard d1.first == 1, dn.first == batch, d1.dropFirst() == dn.dropFirst() else { return false }
        }
        guard batchOne.inputTensors.count == plan.inputTensors.count,
              zip(batchOne.inputTensors, plan.inputTensors).allSatisfy({ $0.0.count * batch == $0.1.count }),
              batchOne.inputTensors.allSatisfy({ $0.dtype == .float32 }),
              plan.inputTensors.allSatisfy({ $0.dtype == .float32 }) else { return false }

        var random = SplitMix64(seed: 0x9E37_79B9_7F4A_7C15)
        let items: [[[Float]]] = (0..<batch).map { _ in
            zip(inputTypes, batchOne.inputTensors).map { dtype, t in
                (0..<t.count).map { _ in
                    let v = random.nextFloat() * 2 - 1
                    return dtype == .float16 ? Float(Float16(v)) : v
                }
            }
        }
        // The batch first, so that identical items end the check before the batch-1 runs.
        for (k, item) in items.enumerated() {
            for (values, t) in zip(item, plan.inputTensors) { store(values, into: t, at: k * values.count) }
        }
        plan.execute(pool)
        let batched: [[ArraySlice<Float>]] = plan.outputTensors.map { out in
            let all = out.floats()
            let per = all.count / batch
            return (0..<batch).map { k in all[(k * per)..<((k + 1) * per)] }
        }
        func distinguishes(_ outputs: [[ArraySlice<Float>]]) -> Bool {
            outputs.contains { perItem in perItem.dropFirst().contains { !sameBits($0, perItem[0]) } }
        }
        guard distinguishes(batched) else { return false }
        var references = batched.map { _ in [ArraySlice<Float>]() }
        for (k, item) in items.enumerated() {
            for (values, t) in zip(item, batchOne.inputTensors) { store(values, into: t, at: 0) }
            batchOne.execute(pool)
            for (o, out) in batchOne.outputTensors.enumerated() {
                let reference = out.floats()[...]
                guard matches(batched[o][k], reference) else { return false }
                references[o].append(reference)
            }
        }
        return distinguishes(references)
    }

    private static func store(_ values: [Float], into t: Tensor, at offset: Int) {
        values.withUnsafeBufferPointer { src in
            guard let base = src.baseAddress else { return }
            (t.f32 + offset).update(from: base, count: src.count)
        }
    }

    private static func matches(_ widened: ArraySlice<Float>, _ reference: ArraySlice<Float>) -> Bool {
        guard widened.count == reference.count else { return false }
        var scale: Float = 0
        for r in reference where r.isFinite { scale = max(scale, abs(r)) }
        let tolerance = wideningTolerance * scale
        for (w, r) in zip(widened, reference) {
            if r.isNaN {
                if !w.isNaN { return false }
            } else if !r.isFinite {
                if w != r { return false }
            } else if !(abs(w - r) <= tolerance) {
                return false
            }
        }
        return true
    }

    private static func sameBits(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.bitPattern == $1.bitPattern }
    }
}
