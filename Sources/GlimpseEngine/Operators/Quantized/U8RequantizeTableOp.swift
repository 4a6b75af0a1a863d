import GlimpseKernels
import GlimpseTensor

/// uint8 → uint8 requantization from one per-tensor (scale, zero point) to another by a 256-entry
/// table (`QU8RequantizeTable`): bit for bit the dequantize-then-quantize pair it replaces
/// (see `FuseQuantizedConcat`).
public final class U8RequantizeTableOp: Operator {
    public var opType: String { "U8RequantizeTable" }
    let table: [UInt8]

    public init(fromScale: Float, fromZeroPoint: Int32, toScale: Float, toZeroPoint: Int32) {
        table = QU8RequantizeTable.make(fromScale: fromScale, fromZeroPoint: fromZeroPoint,
                                        toScale: toScale, toZeroPoint: toZeroPoint)
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        guard inputs[0].dtype == .uint8 else { throw EngineError("input must be uint8, not \(inputs[0].dtype.rawValue)") }
        return [inputs[0]]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0], x.dtype == .uint8 else { throw EngineError("missing uint8 input") }
        let src = UnsafePointer(x.pointer(as: UInt8.self)), dst = ctx.outputs[0].pointer(as: UInt8.self), n = x.count
        let table = self.table
        return ClosureKernel { pool in
            table.withUnsafeBufferPointer { t in
                let chunk = 1 << 14, tasks = (n + chunk - 1) / chunk
                pool.parallelFor(tasks) { i in
                    let start = i * chunk
                    qu8_lookup(src + start, dst + start, count: min(chunk, n - start), table: t.baseAddress!)
                }
            }
        }
    }
}
