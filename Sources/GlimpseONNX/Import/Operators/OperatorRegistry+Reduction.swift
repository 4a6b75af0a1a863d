import GlimpseEngine

extension OperatorRegistry {
    /// Reductions over axes: `ReduceMean`, `ReduceSum`, `ReduceMax`.
    static func registerReduction(_ r: inout [String: OperatorBuilder]) {
        for kind in [ReduceOp.Kind.mean, .sum, .max] {
            r[kind.rawValue] = { a in ReduceOp(kind: kind, axes: try a.ints("axes"), keepDims: try a.int("keepdims", 1) != 0) }
        }
    }
}
