import GlimpseKernels
import GlimpseTensor

/// Element-wise binary operators with NumPy broadcasting (float32; int64 for shape arithmetic).
public final class BinaryOp: Operator {
    public enum Kind: String, Sendable { case add = "Add", sub = "Sub", mul = "Mul", div = "Div", max = "Max", min = "Min", pow = "Pow" }
    public var opType: String { kind.rawValue }
    public let kind: Kind
    /// Fused activation on the result (e.g. Add + Relu).
    public var activation = Activation()

    public init(kind: Kind) { self.kind = kind }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        guard inputs[0].dtype == inputs[1].dtype else {
            throw EngineError("operand types differ: \(inputs[0].dtype) vs \(inputs[1].dtype)")
        }
        guard inputs[0].dtype == .float32 || inputs[0].dtype == .int64 else {
            throw EngineError("unsupported element type \(inputs[0].dtype)")
        }
        return [ValueType(try Broadcast.shape(inputs[0].shape, inputs[1].shape), inputs[0].dtype)]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let a = ctx.inputs[0], let b = ctx.inputs[1] else { throw EngineError("missing operand") }
        let out = ctx.outputs[0]
        let plan = Broadcast.Plan(out: out.shape.dims, a: a.shape.dims, b: b.shape.dims)
        let kind = self.kind, act = activation
        if out.dtype == .int64 {
            let pa = a.pointer(as: Int64.self), pb = b.pointer(as: Int64.self), po = out.pointer(as: Int64.self)
            return ClosureKernel { _ in
                plan.forEach { o, ia, ib in
                    let x = pa[ia], y = pb[ib]
                    switch kind {
                    case .add: po[o] = x &+ y
                    case .sub: po[o] = x &- y
                    case .mul: po[o] = x &* y
                    case .div: po[o] = y == 0 ? 0 : x / y
                    case .max: po[o] = Swift.max(x, y)
                    case .min: po[o] = Swift.min(x, y)
                    case .pow: po[o] = Int64(Foundation_pow(Double(x), Double(y)))
                    }
                }
            }
        }
        let pa = UnsafePointer(a.f32), pb = UnsafePointer(b.f32), po = out.f32
        let fast: BinaryKind? = [.add: .add, .sub: .sub, .mul: .mul, .div: .div, .max: .max, .min: .min][kind]
        @inline(__always) func row(_ o: Int, _ ia: Int, _ sa: Int, _ ib: Int, _ sb: Int, _ n: Int) {
            if let fast {
                f32_binary_row(fast, pa + ia, sa, pb + ib, sb, po + o, n, lower: act.lower, upper: act.upper)
            } else {
                f32_binary(kind, pa + ia, sa, pb + ib, sb, po + o, n, act.lower, act.upper)
            }
        }
        let rows = plan.rowCount
        if ctx.threads > 1 && out.count >= 1 << 15 && plan.rowLength >= 16 && rows >= ctx.threads {
            // Large outputs (EfficientNet's squeeze-and-excitation scaling of whole feature maps):
            // runs of rows spread over the threads.
            let tasks = min(rows, ctx.threads * 4)
            return ClosureKernel { pool in
                pool.parallelTasks(tasks) { t, _ in
                    plan.forEachRow((rows * t / tasks)..<(rows * (t + 1) / tasks), row)
                }
            }
        }
        return ClosureKernel { _ in plan.forEachRow(row) }
    }
}

@inline(__always)
func Foundation_pow(_ x: Double, _ y: Double) -> Double {
    var r = 1.0
    var e = Int(y)
    var b = x
    if Double(e) != y || e < 0 { return y == 0.5 ? x.squareRoot() : .nan }
    while e > 0 { if e & 1 == 1 { r *= b }; b *= b; e >>= 1 }
    return r
}

/// One row of a broadcast binary op: `a` and `b` advance by `sa`/`sb` (0 or 1) per element.
@inline(__always)
func f32_binary(_ kind: BinaryOp.Kind, _ a: UnsafePointer<Float>, _ sa: Int, _ b: UnsafePointer<Float>, _ sb: Int,
                _ o: UnsafeMutablePointer<Float>, _ n: Int, _ lo: Float, _ hi: Float) {
    @inline(__always) func op(_ x: Float, _ y: Float) -> Float {
        switch kind {
        case .add: return x + y
        case .sub: return x - y
        case .mul: return x * y
        case .div: return x / y
        case .max: return Swift.max(x, y)
        case .min: return Swift.min(x, y)
        case .pow: return Float(Foundation_pow(Double(x), Double(y)))
        }
    }
    if sa == 1 && sb == 1 {
        for i in 0..<n { o[i] = Swift.min(Swift.max(op(a[i], b[i]), lo), hi) }
    } else if sa == 1 {
        let y = b[0]
        for i in 0..<n { o[i] = Swift.min(Swift.max(op(a[i], y), lo), hi) }
    } else if sb == 1 {
        let x = a[0]
        for i in 0..<n { o[i] = Swift.min(Swift.max(op(x, b[i]), lo), hi) }
    } else {
        let v = Swift.min(Swift.max(op(a[0], b[0]), lo), hi)
        for i in 0..<n { o[i] = v }
    }
}
