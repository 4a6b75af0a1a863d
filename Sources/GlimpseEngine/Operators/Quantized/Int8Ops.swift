import GlimpseKernels
import GlimpseTensor

/// QuantizeLinear (per tensor) from float32 to uint8 storage.
public final class QuantizeU8Op: Operator {
    public var opType: String { "QuantizeLinear" }
    let scale: Float
    let zeroPoint: Int32
    public init(scale: Float, zeroPoint: Int32) {
        self.scale = scale
        self.zeroPoint = zeroPoint
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        guard inputs[0].dtype == .float32 else { throw EngineError("input must be float32") }
        return [ValueType(inputs[0].shape, .uint8)]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0], x.dtype == .float32 else { throw EngineError("missing float input") }
        let src = UnsafePointer(x.f32), dst = ctx.outputs[0].pointer(as: UInt8.self), n = x.count
        let s = scale, z = zeroPoint
        // Chunks of 16 Ki values over the threads (a 224×224×3 image is 10).
        let chunk = 16_384, tasks = (n + chunk - 1) / chunk
        return ClosureKernel { pool in
            pool.parallelFor(tasks) { t in
                let i = t * chunk
                qu8_quantize_f32(src + i, dst + i, count: min(chunk, n - i), scale: s, zeroPoint: z)
            }
        }
    }
}

/// Conversion between the two representations of quantized values: uint8 storage (the int8
/// operators) and centered floats `q − zp` (operators lowered to fp32 by `LowerQuantizedOps`), at
/// the edges between them.
public final class U8CenteredConvertOp: Operator {
    public let toU8: Bool
    let zeroPoint: Int32
    public var opType: String { toU8 ? "CenteredToU8" : "U8ToCentered" }
    public init(toU8: Bool, zeroPoint: Int32) {
        self.toU8 = toU8
        self.zeroPoint = zeroPoint
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        guard inputs[0].dtype == (toU8 ? .float32 : .uint8) else { throw EngineError("unexpected input type \(inputs[0].dtype.rawValue)") }
        return [ValueType(inputs[0].shape, toU8 ? .uint8 : .float32)]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let n = x.count, z = zeroPoint, y = ctx.outputs[0]
        if toU8 {
            let src = UnsafePointer(x.f32), dst = y.pointer(as: UInt8.self)
            return ClosureKernel { _ in qu8_from_centered_f32(src, dst, count: n, zeroPoint: z) }
        }
        let src = UnsafePointer(x.pointer(as: UInt8.self)), dst = y.f32
        return ClosureKernel { _ in qu8_to_centered_f32(src, dst, count: n, zeroPoint: z) }
    }
}

/// com.microsoft QLinearAdd on uint8 (inputs as the contrib op: A, A scale, A zp, B, B scale,
/// B zp, Y scale, Y zp). Equal shapes run one vector pass; a B repeated along A (a bias row) runs
/// one pass per repetition; other broadcasts run element by element.
public final class Int8AddOp: Operator {
    public var opType: String { "QLinearAdd" }
    let add: QU8Add
    public init(add: QU8Add) { self.add = add }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        guard inputs.count >= 4, inputs[0].dtype == .uint8, inputs[3].dtype == .uint8 else { throw EngineError("inputs must be uint8") }
        return [ValueType(try Broadcast.shape(inputs[0].shape, inputs[3].shape), .uint8)]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let a = ctx.inputs[0], let b = ctx.input(3) else { throw EngineError("missing operand") }
        let out = ctx.outputs[0]
        let pa = UnsafePointer(a.pointer(as: UInt8.self)), pb = UnsafePointer(b.pointer(as: UInt8.self))
        let y = out.pointer(as: UInt8.self)
        let add = self.add, n = out.count
        if a.count == n && b.count == n {
            return ClosureKernel { pool in
                let chunk = 4096, tasks = (n + chunk - 1) / chunk
                pool.parallelFor(tasks) { t in
                    let i = t * chunk
                    add.run(pa + i, pb + i, y + i, count: min(chunk, n - i))
                }
            }
        }
        let dims = out.shape.dims
        if a.count == n, b.count > 0, n % b.count == 0, Array(dims.suffix(b.shape.rank)) == b.shape.dims
            || Array(dims.suffix(b.shape.dims.drop { $0 == 1 }.count)) == Array(b.shape.dims.drop { $0 == 1 }) {
            let m = b.count
            return ClosureKernel { _ in
                for r in 0..<(n / m) { add.run(pa + r * m, pb, y + r * m, count: m) }
            }
        }
        let plan = Broadcast.Plan(out: dims, a: a.shape.dims, b: b.shape.dims)
        return ClosureKernel { _ in
            withExtendedLifetime((a, b)) {
                plan.forEach { o, ia, ib in y[o] = add.reference(pa[ia], pb[ib]) }
            }
        }
    }
}

/// com.microsoft QLinearGlobalAveragePool on uint8, NCHW.
public final class Int8GlobalAveragePoolOp: Operator {
    public var opType: String { "QLinearGlobalAveragePool" }
    let inputScale: Float, outputScale: Float
    let inputZeroPoint: Int32, outputZeroPoint: Int32
    public init(inputScale: Float, inputZeroPoint: Int32, outputScale: Float, outputZeroPoint: Int32) {
        self.inputScale = inputScale
        self.inputZeroPoint = inputZeroPoint
        self.outputScale = outputScale
        self.outputZeroPoint = outputZeroPoint
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let x = inputs[0].shape
        guard x.count >= 3, inputs[0].dtype == .uint8 else { throw EngineError("input must be uint8 NCHW") }
        return [ValueType([x[0], x[1]] + [Int](repeating: 1, count: x.count - 2), .uint8)]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let planes = x.shape[0] * x.shape[1], size = x.count / max(planes, 1)
        let average = QU8GlobalAveragePool(zx: inputZeroPoint, zy: outputZeroPoint,
                                           scale: inputScale / (outputScale * Float(max(size, 1))))
        let src = UnsafePointer(x.pointer(as: UInt8.self)), dst = ctx.outputs[0].pointer(as: UInt8.self)
        let parts = x.count >= 16_384 ? min(planes, 8) : 1
        return ClosureKernel { pool in
            pool.parallelFor(parts) { part in
                for p in planes * part / parts..<planes * (part + 1) / parts { dst[p] = average.run(src + p * size, count: size) }
            }
        }
    }
}

/// QLinearMatMul with uint8 A `[..., K]`, constant int8 B `[K, N]` (zero point 0, scale per tensor
/// or per column), uint8 output: `QS8Gemv` per row of A.
public final class Int8MatMulOp: Operator {
    public var opType: String { "QLinearMatMul" }
    /// The int8 weights until `prepare` packs them (then dropped).
    private var weights: Tensor?
    let inputZeroPoint: UInt8
    let scales: [Float]
    let outputZeroPoint: Int32
    let gemv: QS8Gemv
    private var packed: TensorStorage?
    private var requant: RequantStorage?

    public init(weights: Tensor, inputZeroPoint: UInt8, scales: [Float], outputZeroPoint: Int32) throws {
        guard weights.dtype == .int8, weights.shape.rank == 2 else { throw EngineError("weights must be int8 [K, N]") }
        guard scales.count == weights.shape[1] else { throw EngineError("one scale per column expected") }
        self.weights = weights
        self.inputZeroPoint = inputZeroPoint
        self.scales = scales
        self.outputZeroPoint = outputZeroPoint
        gemv = QS8Gemv(k: weights.shape[0], n: weights.shape[1])
    }

    /// Every input but A was resolved when the operator was built, and B is packed.
    public func packedAway(input: Int) -> Bool { input != 0 && packed != nil }

    public func prepare(constants: [Tensor?]) throws {
        guard packed == nil, let weights else { return }
        defer { self.weights = nil }
        let w = UnsafePointer(weights.pointer(as: Int8.self))
        let p = TensorStorage(byteCount: gemv.packedCount)
        gemv.pack(w, into: p.bytes.assumingMemoryBound(to: Int8.self))
        packed = p
        // Bias and scale vectors padded to whole 16-lane blocks.
        let padded = gemv.blocks * 16
        let sums = gemv.columnSums(w)
        var bias = [Int32](repeating: 0, count: padded), scale = [Float](repeating: 0, count: padded)
        for j in 0..<gemv.n {
            bias[j] = 0 &- Int32(inputZeroPoint) &* sums[j]
            scale[j] = scales[j]
        }
        requant = RequantStorage(Requantization(bias: bias, scale: scale, zeroPoint: outputZeroPoint))
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let x = inputs[0].shape
        guard inputs[0].dtype == .uint8, x.count >= 2, x[x.count - 1] == gemv.k else {
            throw EngineError("input must be uint8 [..., \(gemv.k)], got \(inputs[0])")
        }
        return [ValueType(Array(x.dropLast()) + [gemv.n], .uint8)]
    }

    public func flops(_ inputs: [ValueType], _ outputs: [ValueType]) -> Int { 2 * (outputs.first?.count ?? 0) * gemv.k }

    public func workspaceFloats(_ inputs: [ValueType], _ outputs: [ValueType], threads: Int) -> Int {
        threads * ((gemv.rowBytes / 4 + 31) / 16 * 16)
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0], let packed, let requant else { throw EngineError("missing input or weights") }
        let rows = x.count / gemv.k
        let src = UnsafePointer(x.pointer(as: UInt8.self)), dst = ctx.outputs[0].pointer(as: UInt8.self)
        let gemv = self.gemv, rq = requant.pointers, workspace = ctx.workspace
        let per = (gemv.rowBytes / 4 + 31) / 16 * 16
        let w = UnsafePointer(packed.bytes.assumingMemoryBound(to: Int8.self))
        return ClosureKernel { pool in
            withExtendedLifetime((packed, requant)) {
                // Fewer rows than threads (one image): each row in parts of 8 column blocks (128
                // columns), so every thread has a share of the weights to read.
                let parts = rows < pool.threads ? max(1, (gemv.blocks + 7) / 8) : 1
                pool.parallelTasks(rows * parts) { task, thread in
                    let r = task / parts, p = task % parts
                    let scratch = UnsafeMutableRawPointer(workspace + thread * per).assumingMemoryBound(to: UInt8.self)
                    gemv.runRow(x: src + r * gemv.k, packed: w, requant: rq, y: dst + r * gemv.n, padded: scratch,
                                blocks: parts == 1 ? nil : 8 * p..<8 * (p + 1))
                }
            }
        }
    }
}
