import GlimpseTensor

/// Step 3 of planning: a kernel bound to its tensors for every node that runs one, the shared
/// workspace sized for the largest, and the plan's floating-point operations.
struct PlanKernels {
    var kernels: [any Kernel]
    var labels: [String]
    var nodeKernel: [Int]
    var workspace: TensorStorage
    var flops: Int
}

extension ExecutionPlan {
    static func bindKernels(_ graph: Graph, shapes: PlanShapes, elided: Set<Int>, threads: Int,
                            tensor: (Int) -> Tensor?) throws -> PlanKernels {
        let types = shapes.types
        func typesOf(_ n: Graph.Node) -> (inputs: [ValueType], outputs: [ValueType]) {
            (n.inputs.map { $0 == Graph.noValue ? ValueType.absent : (types[$0] ?? .absent) }, n.outputs.compactMap { types[$0] })
        }
        var wsFloats = 0
        var flops = 0
        for i in shapes.live {
            let n = graph.nodes[i]
            let (inT, outT) = typesOf(n)
            wsFloats = max(wsFloats, n.op.workspaceFloats(inT, outT, threads: threads))
            flops += n.op.flops(inT, outT)
        }
        let workspace = TensorStorage(byteCount: max(wsFloats, 16) * 4 + 64)
        var kernels: [any Kernel] = []
        var labels: [String] = []
        var nodeKernel = [Int](repeating: 0, count: graph.nodes.count + 1)
        var nextNode = 0
        for i in shapes.live {
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
                    let (inT, outT) = typesOf(n)
                    labels.append(OpProfiler.label(n.op, ctx, flops: n.op.flops(inT, outT)))
                } else {
                    labels.append(n.op.opType)
                }
            } catch let e as EngineError {
                throw EngineError("\(graph.name): \(n.label): \(e.description)")
            }
        }
        while nextNode <= graph.nodes.count { nodeKernel[nextNode] = kernels.count; nextNode += 1 }
        return PlanKernels(kernels: kernels, labels: labels, nodeKernel: nodeKernel, workspace: workspace, flops: flops)
    }
}
