import GlimpseEngine
import GlimpseTensor

extension OperatorRegistry {
    /// Shape-subgraph, structural and quantization operators.
    static func registerPhase2(_ r: inout [String: OperatorBuilder]) {
        r["Constant"] = { a in throw a.error("Constant is handled by the importer") }
        r["Shape"] = { a in ShapeOp(start: try a.int("start", 0), end: a.find("end") != nil ? try a.int("end", 0) : nil) }
        r["ConstantOfShape"] = { a in ConstantOfShapeOp(value: try a.tensor("value")) }
        r["Gather"] = { a in GatherOp(axis: try a.int("axis", 0)) }
        r["Cast"] = { a in
            // TensorProto.DataType: FLOAT 1, UINT8 2, INT8 3, INT16 5, INT32 6, INT64 7, BOOL 9,
            // FLOAT16 10, DOUBLE 11, UINT32 12, UINT64 13.
            let to = try a.int("to", 0)
            let types: [Int: DType] = [1: .float32, 2: .uint8, 3: .int8, 5: .int64, 6: .int32, 7: .int64,
                                       9: .bool, 10: .float32, 11: .float32, 12: .int64, 13: .int64]
            guard let dtype = types[to] else { throw a.error("cast to data type \(to) is not supported") }
            return CastOp(to: dtype, roundsToHalf: to == 10)
        }
        r["Transpose"] = { a in TransposeOp(perm: try a.ints("perm")) }
        r["Split"] = { a in
            SplitOp(axis: try a.int("axis", 0), sizes: try a.ints("split"), outputCount: a.node.outputs.count)
        }
        r["LRN"] = { a in
            LRNOp(size: try a.int("size", 1), alpha: try a.float("alpha", 1e-4), beta: try a.float("beta", 0.75), bias: try a.float("bias", 1))
        }
        for kind in [ReduceOp.Kind.mean, .sum, .max] {
            r[kind.rawValue] = { a in ReduceOp(kind: kind, axes: try a.ints("axes"), keepDims: try a.int("keepdims", 1) != 0) }
        }
        r["QuantizeLinear"] = { a in QuantizeOp(quantize: true, axis: try a.int("axis", 1)) }
        r["DequantizeLinear"] = { a in QuantizeOp(quantize: false, axis: try a.int("axis", 1)) }
        r["QLinearConv"] = { a in QLinearPlaceholderOp(opType: "QLinearConv", window: try a.window(), group: try a.int("group", 1)) }
        r["QLinearMatMul"] = { _ in QLinearPlaceholderOp(opType: "QLinearMatMul") }
        r["com.microsoft:QLinearAdd"] = { _ in QLinearAddOp() }
        r["com.microsoft:QLinearGlobalAveragePool"] = { a in
            if try a.int("channels_last", 0) != 0 { throw a.error("channels_last = 1 is not supported") }
            return QLinearGlobalAveragePoolOp()
        }
    }
}
