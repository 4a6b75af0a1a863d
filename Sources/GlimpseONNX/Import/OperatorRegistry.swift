import GlimpseEngine
import GlimpseKernels
import GlimpseTensor

/// Builds an engine operator from an ONNX node's attributes. Builders only translate; constant
/// inputs are read later by the operators, and folding/fusing happen in Engine passes.
typealias OperatorBuilder = (NodeAttributes) throws -> any Operator

/// op name → builder, in the manner of tract's `reg.insert("Conv", conv)`. Keys are "Op" for the
/// default domain and "domain:Op" otherwise.
enum OperatorRegistry {
    static let builders: [String: OperatorBuilder] = {
        var r: [String: OperatorBuilder] = [:]
        r["Conv"] = buildConv
        r["Gemm"] = buildGemm
        r["MatMul"] = { _ in GemmOp(opType: "MatMul") }
        r["MaxPool"] = { a in PoolOp(opType: "MaxPool", kind: .max, window: try a.window()) }
        r["AveragePool"] = { a in
            PoolOp(opType: "AveragePool", kind: .average(countIncludePad: try a.int("count_include_pad", 0) != 0), window: try a.window())
        }
        r["GlobalAveragePool"] = { _ in GlobalPoolOp(opType: "GlobalAveragePool", isMax: false) }
        r["GlobalMaxPool"] = { _ in GlobalPoolOp(opType: "GlobalMaxPool", isMax: true) }
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
        r["Concat"] = { a in ConcatOp(axis: try a.int("axis", 1)) }
        r["Reshape"] = { a in
            ViewOp(opType: "Reshape", kind: .reshape(shape: a.opset < 5 ? try a.ints("shape").map { $0.map(Int64.init) } : nil))
        }
        r["Flatten"] = { a in ViewOp(opType: "Flatten", kind: .flatten(axis: try a.int("axis", 1))) }
        r["Squeeze"] = { a in ViewOp(opType: "Squeeze", kind: .squeeze(axes: try a.ints("axes"))) }
        r["Unsqueeze"] = { a in ViewOp(opType: "Unsqueeze", kind: .unsqueeze(axes: try a.ints("axes"))) }
        r["Identity"] = { _ in ViewOp(opType: "Identity", kind: .identity) }
        r["Dropout"] = { _ in ViewOp(opType: "Dropout", kind: .identity) }
        r["Softmax"] = { a in
            SoftmaxOp(opType: "Softmax", axis: try a.int("axis", a.opset < 13 ? 1 : -1), coerce2D: a.opset < 13, isLog: false)
        }
        r["LogSoftmax"] = { a in
            SoftmaxOp(opType: "LogSoftmax", axis: try a.int("axis", a.opset < 13 ? 1 : -1), coerce2D: a.opset < 13, isLog: true)
        }
        r["BatchNormalization"] = { a in BatchNormOp(epsilon: try a.float("epsilon", 1e-5)) }
        registerPhase2(&r)
        return r
    }()

    static func buildConv(_ a: NodeAttributes) throws -> any Operator {
        ConvOp(window: try a.window(), group: try a.int("group", 1))
    }

    static func buildGemm(_ a: NodeAttributes) throws -> any Operator {
        GemmOp(opType: "Gemm", transA: try a.int("transA", 0) != 0, transB: try a.int("transB", 0) != 0,
               alpha: try a.float("alpha", 1), beta: try a.float("beta", 1))
    }
}
