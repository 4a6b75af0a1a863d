import GlimpseTensor

/// Operators whose output is input 0 with a new shape and the same bytes (no kernel runs):
/// Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout (inference).
public final class ViewOp: Operator {
    public enum Kind: Sendable {
        /// Shape from input 1 (or the fixed `shape`), with 0 = copy and -1 = infer.
        case reshape(shape: [Int64]?)
        case flatten(axis: Int)
        case squeeze(axes: [Int]?)
        case unsqueeze(axes: [Int]?)
        case identity
    }
    public let opType: String
    public let kind: Kind

    public init(opType: String, kind: Kind) {
        self.opType = opType
        self.kind = kind
    }

    public var isView: Bool { true }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let x = inputs[0].shape
        let out: [Int]
        func axesInput() throws -> [Int]? {
            guard inputs.count > 1, inputs[1] != .absent else { return nil }
            guard let c = constants[1] else { throw EngineError("axes must be constant") }
            return c.int64Values().map { Int($0) }
        }
        switch kind {
        case .identity:
            out = x
        case .flatten(let axis):
            let a = axis < 0 ? axis + x.count : axis
            guard a >= 0 && a <= x.count else { throw EngineError("axis \(axis) out of range for \(x)") }
            out = [x[..<a].reduce(1, *), x[a...].reduce(1, *)]
        case .reshape(let fixed):
            var target: [Int64]
            if let fixed { target = fixed } else {
                guard inputs.count > 1, let c = constants[1] else {
                    throw EngineError("shape input must be constant (or computable from shapes at load)")
                }
                target = c.int64Values()
            }
            var shape = target.enumerated().map { i, v in v == 0 && i < x.count ? x[i] : Int(v) }
            let known = shape.filter { $0 != -1 }.reduce(1, *)
            let total = x.reduce(1, *)
            if let inf = shape.firstIndex(of: -1) {
                guard known > 0, total % known == 0 else { throw EngineError("cannot reshape \(x) to \(target)") }
                shape[inf] = total / known
            }
            guard shape.reduce(1, *) == total, shape.allSatisfy({ $0 >= 0 }) else {
                throw EngineError("cannot reshape \(x) (\(total) elements) to \(target)")
            }
            out = shape
        case .squeeze(let attrAxes):
            let axes = try attrAxes ?? axesInput()
            if let axes {
                let norm = Set(axes.map { $0 < 0 ? $0 + x.count : $0 })
                for a in norm where a < 0 || a >= x.count || x[a] != 1 {
                    throw EngineError("cannot squeeze axis \(a) of \(x)")
                }
                out = x.enumerated().filter { !norm.contains($0.offset) }.map { $0.element }
            } else {
                out = x.filter { $0 != 1 }
            }
        case .unsqueeze(let attrAxes):
            guard let axes = try attrAxes ?? axesInput() else { throw EngineError("axes are required") }
            let rank = x.count + axes.count
            let norm = Set(axes.map { $0 < 0 ? $0 + rank : $0 })
            guard norm.count == axes.count, norm.allSatisfy({ $0 >= 0 && $0 < rank }) else {
                throw EngineError("bad axes \(axes) for rank \(x.count)")
            }
            var it = x.makeIterator()
            out = (0..<rank).map { norm.contains($0) ? 1 : it.next()! }
        }
        return [ValueType(out, inputs[0].dtype)]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel { NoKernel() }
}
