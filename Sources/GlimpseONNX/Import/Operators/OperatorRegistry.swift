import GlimpseEngine

/// Builds an engine operator from an ONNX node's attributes. Builders only translate; constant
/// inputs are read later by the operators, and folding/fusing happen in Engine passes.
typealias OperatorBuilder = (NodeAttributes) throws -> any Operator

/// op name → builder, in the manner of tract's `reg.insert("Conv", conv)`. Keys are "Op" for the
/// default domain and "domain:Op" otherwise. Each operator family registers its builders in its own
/// file (`OperatorRegistry+<Family>.swift`).
enum OperatorRegistry {
    static let builders: [String: OperatorBuilder] = {
        var r: [String: OperatorBuilder] = [:]
        registerConvolutionAndPooling(&r)
        registerElementwise(&r)
        registerShapeAndView(&r)
        registerNormalization(&r)
        registerReduction(&r)
        registerQuantized(&r)
        return r
    }()
}
