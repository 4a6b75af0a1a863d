import GlimpseTensor

/// Concat along `axis` (any element type).
public final class ConcatOp: Operator {
    public var opType: String { "Concat" }
    public let axis: Int
    public init(axis: Int) { self.axis = axis }

    func normalizedAxis(_ rank: Int) throws -> Int {
        let a = axis < 0 ? axis + rank : axis
        guard a >= 0 && a < rank else { throw EngineError("axis \(axis) out of range for rank \(rank)") }
        return a
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        guard let first = inputs.first else { throw EngineError("no inputs") }
        let a = try normalizedAxis(first.shape.count)
        var out = first.shape
        out[a] = 0
        for t in inputs {
            guard t.dtype == first.dtype, t.shape.count == out.count else { throw EngineError("inputs differ in type or rank") }
            for d in out.indices where d != a && t.shape[d] != out[d] {
                throw EngineError("input shapes \(inputs.map { $0.shape }) differ outside axis \(a)")
            }
            out[a] += t.shape[a]
        }
        return [ValueType(out, first.dtype)]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        let out = ctx.outputs[0]
        let a = try normalizedAxis(out.shape.rank)
        let outer = out.shape.dims[..<a].reduce(1, *)
        let elem = out.dtype.byteSize
        let outRow = out.shape.dims[a...].reduce(1, *) * elem
        var parts: [(UnsafeRawPointer, Int)] = []   // (source, bytes per outer row)
        for case let t? in ctx.inputs { parts.append((UnsafeRawPointer(t.rawPointer), t.shape.dims[a...].reduce(1, *) * elem)) }
        let dst = out.rawPointer
        let inner = out.shape.dims[(a + 1)...].reduce(1, *) * elem
        let total = outer * outRow
        if total < 1 << 16 || inner < 1 << 10 || ctx.threads == 1 {
            return ClosureKernel { _ in
                for o in 0..<outer {
                    var offset = o * outRow
                    for (src, bytes) in parts {
                        (dst + offset).copyMemory(from: src + o * bytes, byteCount: bytes)
                        offset += bytes
                    }
                }
            }
        }
        // Large planes (channel concatenation of feature maps): thread t copies the t-th slice of
        // every plane, the part of the image its convolutions wrote (they split pixels alike), so
        // the copy reads from its own core's cache.
        let threads = ctx.threads
        return ClosureKernel { pool in
            pool.parallelTasks(threads) { t, _ in
                let lo = inner * t / threads / elem * elem, hi = inner * (t + 1) / threads / elem * elem
                for o in 0..<outer {
                    var offset = o * outRow
                    for (src, bytes) in parts {
                        var plane = 0
                        while plane < bytes {
                            (dst + offset + plane + lo).copyMemory(from: src + o * bytes + plane + lo, byteCount: hi - lo)
                            plane += inner
                        }
                        offset += bytes
                    }
                }
            }
        }
    }
}
