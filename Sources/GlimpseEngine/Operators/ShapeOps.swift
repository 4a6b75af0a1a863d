import GlimpseTensor

/// Shape: the input's dimensions as int64, known at plan time (folded, never run).
public final class ShapeOp: Operator {
    public var opType: String { "Shape" }
    public let start: Int
    public let end: Int?
    public init(start: Int = 0, end: Int? = nil) {
        self.start = start
        self.end = end
    }

    public func foldFromTypes(_ inputs: [ValueType]) -> [Tensor]? {
        let dims = inputs[0].shape
        let r = dims.count
        func clampAxis(_ a: Int) -> Int { min(max(a < 0 ? a + r : a, 0), r) }
        let s = clampAxis(start), e = clampAxis(end ?? r)
        return [Tensor.int64(s < e ? dims[s..<e].map { Int64($0) } : [])]
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        [ValueType([inputs[0].shape.count], .int64)]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel { NoKernel() }
}

/// ConstantOfShape: a tensor of the given (constant) shape filled with `value`.
public final class ConstantOfShapeOp: Operator {
    public var opType: String { "ConstantOfShape" }
    public let value: Tensor
    public init(value: Tensor?) { self.value = value ?? Tensor(shape: [1], floats: [0]) }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        guard let s = constants[0] else { throw EngineError("shape must be constant") }
        let dims = s.int64Values()
        guard dims.allSatisfy({ $0 >= 0 && $0 < (1 << 31) }) else { throw EngineError("bad shape \(dims)") }
        var bytes = value.dtype.byteSize
        for d in dims {
            let (r, overflow) = bytes.multipliedReportingOverflow(by: Int(d))
            guard !overflow, r <= ConstantFolding.maxTensorBytes else {
                throw EngineError("shape \(dims) is too large (over \(ConstantFolding.maxTensorBytes >> 20) MiB)")
            }
            bytes = r
        }
        return [ValueType(dims.map { Int($0) }, value.dtype)]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        let out = ctx.outputs[0], v = value
        let size = v.dtype.byteSize
        return ClosureKernel { _ in
            for i in 0..<out.count { (out.rawPointer + i * size).copyMemory(from: v.rawPointer, byteCount: size) }
        }
    }
}

/// Gather along `axis` with constant or runtime int64 indices (any element type).
public final class GatherOp: Operator {
    public var opType: String { "Gather" }
    public let axis: Int
    public init(axis: Int) { self.axis = axis }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let d = inputs[0].shape
        let a = axis < 0 ? axis + d.count : axis
        guard a >= 0 && a < d.count else { throw EngineError("axis \(axis) out of range for \(d)") }
        return [ValueType(Array(d[..<a]) + inputs[1].shape + Array(d[(a + 1)...]), inputs[0].dtype)]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let data = ctx.inputs[0], let idx = ctx.inputs[1] else { throw EngineError("missing input") }
        let d = data.shape.dims
        let a = axis < 0 ? axis + d.count : axis
        let outer = d[..<a].reduce(1, *), n = d[a]
        let innerBytes = d[(a + 1)...].reduce(1, *) * data.dtype.byteSize
        let out = ctx.outputs[0]
        if let c = idx.count > 0 ? Optional(idx) : nil, c.dtype != .int64 && c.dtype != .int32 {
            throw EngineError("indices must be integers")
        }
        if innerBytes == 4 && outer == 1 {
            // One 32-bit element per index (a look-up table: k-means weights folded at load).
            return ClosureKernel { _ in
                let indices = idx.int64Values()
                let src = data.rawPointer.assumingMemoryBound(to: UInt32.self)
                let dst = out.rawPointer.assumingMemoryBound(to: UInt32.self)
                for (o, raw) in indices.enumerated() {
                    let j = raw < 0 ? Int(raw) + n : Int(raw)
                    dst[o] = j >= 0 && j < n ? src[j] : 0
                }
            }
        }
        return ClosureKernel { _ in
            let indices = idx.int64Values()
            var o = 0
            for i in 0..<outer {
                for raw in indices {
                    var j = Int(raw)
                    if j < 0 { j += n }
                    let dst = out.rawPointer + o * innerBytes
                    if j >= 0 && j < n {
                        dst.copyMemory(from: data.rawPointer + (i * n + j) * innerBytes, byteCount: innerBytes)
                    } else {
                        dst.initializeMemory(as: UInt8.self, repeating: 0, count: innerBytes)
                    }
                    o += 1
                }
            }
        }
    }
}
