import GlimpseEngine

extension OperatorRegistry {
    /// Views, data movement and shape sub-graphs: reshapes, concatenation, splits, transposes, and
    /// the `Shape` / `Gather` / `ConstantOfShape` nodes that constant folding evaluates at load.
    static func registerShapeAndView(_ r: inout [String: OperatorBuilder]) {
        r["Reshape"] = { a in
            ViewOp(opType: "Reshape", kind: .reshape(shape: a.opset < 5 ? try a.ints("shape").map { $0.map(Int64.init) } : nil))
        }
        r["Flatten"] = { a in ViewOp(opType: "Flatten", kind: .flatten(axis: try a.int("axis", 1))) }
        r["Squeeze"] = { a in ViewOp(opType: "Squeeze", kind: .squeeze(axes: try a.ints("axes"))) }
        r["Unsqueeze"] = { a in ViewOp(opType: "Unsqueeze", kind: .unsqueeze(axes: try a.ints("axes"))) }
        r["Identity"] = { _ in ViewOp(opType: "Identity", kind: .identity) }
        r["Dropout"] = { _ in ViewOp(opType: "Dropout", kind: .identity) }
        r["Concat"] = { a in ConcatOp(axis: try a.int("axis", 1)) }
        r["Split"] = { a in
            SplitOp(axis: try a.int("axis", 0), sizes: try a.ints("split"), outputCount: a.node.outputs.count)
        }
        r["Transpose"] = { a in TransposeOp(perm: try a.ints("perm")) }
        r["Shape"] = { a in ShapeOp(start: try a.int("start", 0), end: a.find("end") != nil ? try a.int("end", 0) : nil) }
        r["ConstantOfShape"] = { a in ConstantOfShapeOp(value: try a.tensor("value")) }
        r["Gather"] = { a in GatherOp(axis: try a.int("axis", 0)) }
    }
}
