import GlimpseEngine
import GlimpseKernels
import GlimpseTensor

extension OperatorRegistry {
    /// Element-wise operators: activations and other unary functions, binary arithmetic with
    /// broadcasting, and type casts.
    static func registerElementwise(_ r: inout [String: OperatorBuilder]) {
        registerActivations(&r)
        for kind in [BinaryOp.Kind.add, .sub, .mul, .div, .max, .min, .pow] {
            r[kind.rawValue] = { a in
                if a.opset < 7, try a.int("broadcast", 0) != 0, a.find("axis") != nil {
                    throw a.error("legacy broadcast with an explicit axis is not supported")
                }
                return BinaryOp(kind: kind)
            }
        }
        r["Sum"] = { a in
            guard a.node.inputs.count == 2 else { throw a.error("Sum with \(a.node.inputs.count) inputs is not supported") }
            return BinaryOp(kind: .add)
        }
        r["Cast"] = { a in
            // TensorProto.DataType: FLOAT 1, UINT8 2, INT8 3, INT16 5, INT32 6, INT64 7, BOOL 9,
            // FLOAT16 10, DOUBLE 11, UINT32 12, UINT64 13.
            let to = try a.int("to", 0)
            let types: [Int: DType] = [1: .float32, 2: .uint8, 3: .int8, 5: .int64, 6: .int32, 7: .int64,
                                       9: .bool, 10: .float32, 11: .float32, 12: .int64, 13: .int64]
            guard let dtype = types[to] else { throw a.error("cast to data type \(to) is not supported") }
            return CastOp(to: dtype, roundsToHalf: to == 10)
        }
    }

    /// Activations and the other unary functions.
    static func registerActivations(_ r: inout [String: OperatorBuilder]) {
        r["Relu"] = { _ in UnaryOp(opType: "Relu", kind: .relu) }
        r["Clip"] = { a in
            UnaryOp(opType: "Clip", kind: .clip(try a.float("min", -.infinity), try a.float("max", .infinity)))
        }
        r["Sigmoid"] = { _ in UnaryOp(opType: "Sigmoid", kind: .sigmoid) }
        r["HardSigmoid"] = { a in
            UnaryOp(opType: "HardSigmoid", kind: .hardSigmoid(alpha: try a.float("alpha", 0.2), beta: try a.float("beta", 0.5)))
        }
        r["HardSwish"] = { _ in UnaryOp(opType: "HardSwish", kind: .hardSwish) }
        r["Tanh"] = { _ in UnaryOp(opType: "Tanh", kind: .tanh) }
        r["Exp"] = { _ in UnaryOp(opType: "Exp", kind: .exp) }
        r["Neg"] = { _ in UnaryOp(opType: "Neg", kind: .neg) }
        r["Abs"] = { _ in UnaryOp(opType: "Abs", kind: .abs) }
        r["Sqrt"] = { _ in UnaryOp(opType: "Sqrt", kind: .sqrt) }
        r["Reciprocal"] = { _ in UnaryOp(opType: "Reciprocal", kind: .reciprocal) }
        r["LeakyRelu"] = { a in UnaryOp(opType: "LeakyRelu", kind: .leakyRelu(try a.float("alpha", 0.01))) }
    }
}
