import GlimpseEngine

extension OperatorRegistry {
    /// Quantization: QDQ pairs and the QOperator nodes (`QLinear*`, including the com.microsoft
    /// ones). The Engine's passes fuse and lower them.
    static func registerQuantized(_ r: inout [String: OperatorBuilder]) {
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
