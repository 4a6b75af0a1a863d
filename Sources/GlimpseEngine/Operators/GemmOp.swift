import GlimpseKernels
import GlimpseTensor

/// Gemm (Y = α·A'·B' + β·C) and MatMul with a constant B. A may have leading batch dimensions
/// (MatMul); they are folded into M. B is packed into 32-column panels once in `prepare`, with α
/// applied; C becomes a per-column bias. A is packed per run into the plan's workspace.
public final class GemmOp: Operator {
    public let opType: String
    public var transA: Bool
    public var transB: Bool
    public var alpha: Float
    public var beta: Float
    public var activation = Activation()
    /// Requantization (QLinearMatMul lowered to float): per-column (or single) output scale, and
    /// rounding to integers.
    public var outputScale: [Float]?
    var scaleTensor: Tensor?
    var packedB: TensorStorage?
    var biasTensor: Tensor?
    var k = 0
    var n = 0

    public init(opType: String, transA: Bool = false, transB: Bool = false, alpha: Float = 1, beta: Float = 1) {
        self.opType = opType
        self.transA = transA
        self.transB = transB
        self.alpha = alpha
        self.beta = beta
    }

    public func prepare(constants: [Tensor?]) throws {
        guard constants.count >= 2, let b = constants[1] else {
            throw EngineError("the second operand must be a constant (weights)")
        }
        guard b.dtype == .float32, b.shape.rank == 2 else { throw EngineError("weights must be a float32 matrix, got \(b)") }
        k = transB ? b.shape[1] : b.shape[0]
        n = transB ? b.shape[0] : b.shape[1]
        let storage = TensorStorage(byteCount: GemmPacking.packedBCount(n: n, k: k) * 4)
        let src: Tensor
        if alpha != 1 {
            src = Tensor(shape: b.shape, dtype: .float32)
            for i in 0..<b.count { src.f32[i] = b.f32[i] * alpha }
        } else {
            src = b
        }
        GemmPacking.packB(src.f32, k: k, n: n, rowStride: transB ? 1 : n, colStride: transB ? k : 1,
                          into: storage.bytes.assumingMemoryBound(to: Float.self))
        packedB = storage
        if constants.count > 2, let c = constants[2] {
            guard c.count == n || c.count == 1 else {
                throw EngineError("bias C of shape \(c.shape) is not broadcastable per column (N = \(n))")
            }
            let bias = Tensor(shape: Shape([n + 16]), dtype: .float32)
            let values = c.floats()
            for j in 0..<n { bias.f32[j] = beta * values[values.count == 1 ? 0 : j] }
            biasTensor = bias
        }
        if let s = outputScale {
            guard s.count == n || s.count == 1 else { throw EngineError("output scale count \(s.count) differs from N = \(n)") }
            let t = Tensor(shape: Shape([n + 16]), dtype: .float32)
            for j in 0..<n { t.f32[j] = s[s.count == 1 ? 0 : j] }
            scaleTensor = t
        }
    }

    /// B runs from `packedB`, a constant C from `biasTensor`.
    public func packedAway(input: Int) -> Bool { (input == 1 && packedB != nil) || (input == 2 && biasTensor != nil) }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let a = inputs[0].shape
        guard a.count >= 2 else { throw EngineError("A must have rank ≥ 2, got \(a)") }
        if opType == "Gemm" && a.count != 2 { throw EngineError("Gemm A must be 2-D, got \(a)") }
        let ak = transA ? a[a.count - 2] : a[a.count - 1]
        guard ak == k else { throw EngineError("inner dimensions differ: A \(a) vs weights K = \(k)") }
        var out = a
        if transA { out = [a[1], a[0]] }
        out[out.count - 1] = n
        return [ValueType(out)]
    }

    func rows(_ a: [Int]) -> Int { transA ? a[1] : a.dropLast().reduce(1, *) }

    public func flops(_ inputs: [ValueType], _ outputs: [ValueType]) -> Int {
        2 * (outputs.first?.count ?? 0) * k
    }

    public func workspaceFloats(_ inputs: [ValueType], _ outputs: [ValueType], threads: Int) -> Int {
        GemmPacking.packedACount(m: rows(inputs[0].shape), k: k) + 16
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let a = ctx.inputs[0], let packedB else { throw EngineError("not prepared") }
        let m = rows(a.shape.dims)
        let k = self.k, n = self.n, transA = self.transA
        let src = UnsafePointer(a.f32), dst = ctx.outputs[0].f32
        let packedA = ctx.workspace
        let bp = UnsafePointer(packedB.bytes.assumingMemoryBound(to: Float.self))
        let bias = biasTensor.map { UnsafePointer($0.f32) }
        let act = activation
        let scale = scaleTensor.map { UnsafePointer($0.f32) }
        let retained = (packedB, biasTensor, scaleTensor)
        let panels = GemmDriver.panelCount(n: n)
        if m == 1 {
            // One row: a matrix-vector product streaming B (`f32_gemv_packed_b_4x32`), A read in place.
            return ClosureKernel { pool in
                withExtendedLifetime(retained) {
                    let epilogue = GemmEpilogue(colBias: bias, colScale: scale, roundToInteger: scale != nil,
                                                lowerBound: act.lower, upperBound: act.upper)
                    let chunks = min(panels, ctx.threads)
                    pool.parallelFor(chunks) { c in
                        f32_gemv_packed_b_4x32.run(k: k, n: n, x: src, packedB: bp, y: dst, epilogue: epilogue,
                                          panels: (panels * c / chunks)..<(panels * (c + 1) / chunks))
                    }
                }
            }
        }
        return ClosureKernel { pool in
            withExtendedLifetime(retained) {
                GemmPacking.packA(src, m: m, k: k, rowStride: transA ? 1 : k, colStride: transA ? m : 1, into: packedA)
                let epilogue = GemmEpilogue(colBias: bias, colScale: scale, roundToInteger: scale != nil, lowerBound: act.lower, upperBound: act.upper)
                let chunks = min(panels, ctx.threads)
                pool.parallelFor(chunks) { c in
                    let lo = panels * c / chunks, hi = panels * (c + 1) / chunks
                    GemmDriver.run(m: m, n: n, k: k, packedA: UnsafePointer(packedA), b: PackedB(base: bp, k: k),
                                   c: dst, ldc: n, epilogue: epilogue, panels: lo..<hi, scratch: packedA)
                }
            }
        }
    }
}
