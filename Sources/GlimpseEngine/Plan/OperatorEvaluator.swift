import GlimpseTensor

/// Runs one operator on known tensors (constant folding at load and plan time).
enum OperatorEvaluator {
    static func evaluate(_ op: any Operator, inputs: [Tensor?], label: String) throws -> [Tensor] {
        let types = inputs.map { $0.map { ValueType($0.shape.dims, $0.dtype) } ?? .absent }
        if let folded = op.foldFromTypes(types) { return folded }
        let outTypes = try op.inferTypes(types, constants: inputs)
        var outputs: [Tensor] = []
        for (i, t) in outTypes.enumerated() {
            if op.isView, i == 0, let src = inputs[0] {
                // A view of a constant: copy so folded constants never alias each other.
                let copy = Tensor(shape: Shape(t.shape), dtype: t.dtype)
                copy.rawPointer.copyMemory(from: src.rawPointer, byteCount: min(src.byteCount, copy.byteCount))
                outputs.append(copy)
            } else {
                outputs.append(Tensor(shape: Shape(t.shape), dtype: t.dtype))
            }
        }
        if op.isView { return outputs }
        let ws = op.workspaceFloats(types, outTypes, threads: 1)
        let workspace = TensorStorage(byteCount: max(1, ws) * 4)
        let kernel = try op.makeKernel(KernelContext(
            inputs: inputs, outputs: outputs,
            workspace: workspace.bytes.assumingMemoryBound(to: Float.self), threads: 1))
        kernel.run(.serial)
        withExtendedLifetime(workspace) {}
        return outputs
    }
}
