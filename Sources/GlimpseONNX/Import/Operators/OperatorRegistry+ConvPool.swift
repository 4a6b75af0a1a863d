import GlimpseEngine
import GlimpseKernels

extension OperatorRegistry {
    /// Convolution, matrix products and pooling.
    static func registerConvolutionAndPooling(_ r: inout [String: OperatorBuilder]) {
        r["Conv"] = { a in ConvOp(window: try a.window(), group: try a.int("group", 1)) }
        r["Gemm"] = { a in
            GemmOp(opType: "Gemm", transA: try a.int("transA", 0) != 0, transB: try a.int("transB", 0) != 0,
                   alpha: try a.float("alpha", 1), beta: try a.float("beta", 1))
        }
        r["MatMul"] = { _ in GemmOp(opType: "MatMul") }
        r["MaxPool"] = { a in PoolOp(opType: "MaxPool", kind: .max, window: try a.window()) }
        r["AveragePool"] = { a in
            PoolOp(opType: "AveragePool", kind: .average(countIncludePad: try a.int("count_include_pad", 0) != 0), window: try a.window())
        }
        r["GlobalAveragePool"] = { _ in GlobalPoolOp(opType: "GlobalAveragePool", isMax: false) }
        r["GlobalMaxPool"] = { _ in GlobalPoolOp(opType: "GlobalMaxPool", isMax: true) }
    }
}
