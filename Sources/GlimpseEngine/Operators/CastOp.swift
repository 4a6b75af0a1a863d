import GlimpseTensor

/// Cast: converts element types. Float targets (float, float16, double) become float32 (float16
/// rounds through half precision first, as a real cast would); integer targets keep their width
/// where the engine has the type, else int64. Mostly folded at load (e.g. uint8 indices → int32
/// for a `Gather` look-up table, float16 weights → float).
public final class CastOp: Operator {
    public var opType: String { "Cast" }
    /// Element type of the result inside the engine.
    public let to: DType
    /// True when the ONNX target is float16: values are rounded to half precision.
    public let roundsToHalf: Bool

    public init(to: DType, roundsToHalf: Bool = false) {
        self.to = to
        self.roundsToHalf = roundsToHalf
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        [ValueType(inputs[0].shape, to)]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let out = ctx.outputs[0], to = self.to, half = roundsToHalf
        return ClosureKernel { _ in CastOp.convert(x, into: out, to: to, roundsToHalf: half) }
    }

    static func convert(_ x: Tensor, into out: Tensor, to: DType, roundsToHalf: Bool) {
        let n = min(x.count, out.count)
        if x.dtype == to && !roundsToHalf {
            out.rawPointer.copyMemory(from: x.rawPointer, byteCount: n * to.byteSize)
            return
        }
        // Fast paths for what quantized models fold at load: uint8 / int8 indices → int32 / int64.
        if (x.dtype == .uint8 || x.dtype == .int8) && (to == .int32 || to == .int64) && !roundsToHalf {
            let signed = x.dtype == .int8
            let s = x.rawPointer.assumingMemoryBound(to: UInt8.self)
            if to == .int32 {
                let d = out.pointer(as: Int32.self)
                for i in 0..<n { d[i] = signed ? Int32(Int8(bitPattern: s[i])) : Int32(s[i]) }
            } else {
                let d = out.pointer(as: Int64.self)
                for i in 0..<n { d[i] = signed ? Int64(Int8(bitPattern: s[i])) : Int64(s[i]) }
            }
            return
        }
        switch to {
        case .float32, .float16:
            let values = x.floats()
            let d = out.f32
            for i in 0..<n { d[i] = roundsToHalf ? Float(Float16(values[i])) : values[i] }
        case .int64, .int32, .int8, .uint8, .bool:
            let values = CastOp.integers(x)
            for i in 0..<n {
                let v = values[i]
                switch to {
                case .int64: out.pointer(as: Int64.self)[i] = v
                case .int32: out.pointer(as: Int32.self)[i] = Int32(truncatingIfNeeded: v)
                case .int8: out.pointer(as: Int8.self)[i] = Int8(truncatingIfNeeded: v)
                case .uint8: out.pointer(as: UInt8.self)[i] = UInt8(truncatingIfNeeded: v)
                default: out.pointer(as: UInt8.self)[i] = v != 0 ? 1 : 0
                }
            }
        }
    }

    /// Integer values of any tensor; floats truncate toward zero (ONNX Cast float → int).
    static func integers(_ x: Tensor) -> [Int64] {
        switch x.dtype {
        case .int64, .int32: return x.int64Values()
        case .int8: return (0..<x.count).map { Int64(x.pointer(as: Int8.self)[$0]) }
        case .uint8, .bool: return (0..<x.count).map { Int64(x.pointer(as: UInt8.self)[$0]) }
        case .float32, .float16:
            return x.floats().map { v in v.isFinite ? Int64(max(min(v, 9.2e18), -9.2e18)) : 0 }
        }
    }
}
