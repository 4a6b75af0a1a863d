import GlimpseEngine

extension OperatorRegistry {
    /// Normalizations: batch and local response normalization, softmax.
    static func registerNormalization(_ r: inout [String: OperatorBuilder]) {
        r["BatchNormalization"] = { a in BatchNormOp(epsilon: try a.float("epsilon", 1e-5)) }
        r["LRN"] = { a in
            LRNOp(size: try a.int("size", 1), alpha: try a.float("alpha", 1e-4), beta: try a.float("beta", 0.75), bias: try a.float("bias", 1))
        }
        r["Softmax"] = { a in
            SoftmaxOp(opType: "Softmax", axis: try a.int("axis", a.opset < 13 ? 1 : -1), coerce2D: a.opset < 13, isLog: false)
        }
        r["LogSoftmax"] = { a in
            SoftmaxOp(opType: "LogSoftmax", axis: try a.int("axis", a.opset < 13 ? 1 : -1), coerce2D: a.opset < 13, isLog: true)
        }
    }
}
