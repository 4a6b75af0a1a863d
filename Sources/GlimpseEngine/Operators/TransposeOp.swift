import GlimpseTensor

/// Transpose with permutation `perm` (default: reverse), any element type. The innermost run that
/// stays contiguous in both layouts is copied as one block.
public final class TransposeOp: Operator {
    public var opType: String { "Transpose" }
    public let perm: [Int]?
    public init(perm: [Int]?) { self.perm = perm }

    func permutation(_ rank: Int) throws -> [Int] {
        let p = perm ?? Array((0..<rank).reversed())
        guard p.count == rank, Set(p) == Set(0..<rank) else { throw EngineError("perm \(p) is not a permutation of rank \(rank)") }
        return p
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let p = try permutation(inputs[0].shape.count)
        return [ValueType(p.map { inputs[0].shape[$0] }, inputs[0].dtype)]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let dims = x.shape.dims
        let p = try permutation(dims.count)
        let inStrides = Shape(dims).strides
        let outDims = p.map { dims[$0] }
        // Trailing axes left in place form one contiguous block.
        var block = 1, keep = outDims.count
        while keep > 0 && p[keep - 1] == keep - 1 {
            block *= outDims[keep - 1]
            keep -= 1
        }
        let elem = x.dtype.byteSize
        let loopDims = Array(outDims[..<keep])
        let loopStrides = (0..<keep).map { inStrides[p[$0]] }
        let src = x.rawPointer, dst = ctx.outputs[0].rawPointer
        let blockBytes = block * elem
        return ClosureKernel { _ in
            let total = loopDims.reduce(1, *)
            var index = [Int](repeating: 0, count: loopDims.count)
            var offset = 0
            for o in 0..<total {
                (dst + o * blockBytes).copyMemory(from: src + offset * elem, byteCount: blockBytes)
                var d = loopDims.count - 1
                while d >= 0 {
                    index[d] += 1
                    offset += loopStrides[d]
                    if index[d] < loopDims[d] { break }
                    offset -= loopStrides[d] * loopDims[d]
                    index[d] = 0
                    d -= 1
                }
            }
        }
    }
}

/// Split along `axis` into given sizes (attribute or constant input 1) or equal parts.
public final class SplitOp: Operator {
    public var opType: String { "Split" }
    public let axis: Int
    public let sizes: [Int]?
    public let outputCount: Int
    public init(axis: Int, sizes: [Int]?, outputCount: Int) {
        self.axis = axis
        self.sizes = sizes
        self.outputCount = outputCount
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let d = inputs[0].shape
        let a = axis < 0 ? axis + d.count : axis
        guard a >= 0 && a < d.count else { throw EngineError("axis \(axis) out of range for \(d)") }
        var parts = sizes
        if parts == nil, inputs.count > 1, inputs[1] != .absent {
            guard let c = constants[1] else { throw EngineError("split sizes must be constant") }
            parts = c.int64Values().map { Int($0) }
        }
        let s = parts ?? {
            let n = outputCount, len = d[a]
            let each = (len + n - 1) / n
            return (0..<n).map { i in max(0, min(each, len - i * each)) }
        }()
        guard s.count == outputCount, s.reduce(0, +) == d[a], s.allSatisfy({ $0 >= 0 }) else {
            throw EngineError("split \(s) does not divide axis \(a) of \(d) into \(outputCount) parts")
        }
        return s.map { n in var o = d; o[a] = n; return ValueType(o, inputs[0].dtype) }
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let d = x.shape.dims
        let a = axis < 0 ? axis + d.count : axis
        let outer = d[..<a].reduce(1, *)
        let elem = x.dtype.byteSize
        let rowBytes = d[a...].reduce(1, *) * elem
        let parts = ctx.outputs.map { ($0.rawPointer, $0.shape.dims[a...].reduce(1, *) * elem) }
        let src = x.rawPointer
        return ClosureKernel { _ in
            for o in 0..<outer {
                var off = o * rowBytes
                for (dst, bytes) in parts {
                    (dst + o * bytes).copyMemory(from: src + off, byteCount: bytes)
                    off += bytes
                }
            }
        }
    }
}
