import Foundation
import GlimpseKernels
import GlimpseTensor

/// Local response normalization across channels (AlexNet, GoogLeNet):
/// y = x / (bias + α/size · Σ x²)^β over channels [c − ⌊(size−1)/2⌋, c + ⌈(size−1)/2⌉].
public final class LRNOp: Operator {
    public var opType: String { "LRN" }
    public let size: Int, alpha: Float, beta: Float, bias: Float
    public init(size: Int, alpha: Float, beta: Float, bias: Float) {
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.bias = bias
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        guard inputs[0].shape.count >= 3, size >= 1 else { throw EngineError("needs NC… input and size ≥ 1") }
        return [inputs[0]]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let n = x.shape[0], c = x.shape[1], inner = x.count / max(n * c, 1)
        let src = UnsafePointer(x.f32), dst = ctx.outputs[0].f32
        let lo = (size - 1) / 2, hi = size - 1 - lo
        let scale = alpha / Float(size), beta = self.beta, bias = self.bias
        return ClosureKernel { _ in
            for b in 0..<n {
                for ch in 0..<c {
                    let out = dst + (b * c + ch) * inner
                    for i in 0..<inner { out[i] = 0 }
                    for k in max(0, ch - lo)...min(c - 1, ch + hi) {
                        let s = src + (b * c + k) * inner
                        for i in 0..<inner { out[i] += s[i] * s[i] }
                    }
                    let s = src + (b * c + ch) * inner
                    for i in 0..<inner { out[i] = s[i] / Foundation.pow(bias + scale * out[i], beta) }
                }
            }
        }
    }
}

/// ReduceMean / ReduceMax / ReduceSum over `axes` (attribute or constant input), keepdims.
public final class ReduceOp: Operator {
    public enum Kind: String, Sendable { case mean = "ReduceMean", sum = "ReduceSum", max = "ReduceMax" }
    public var opType: String { kind.rawValue }
    public let kind: Kind
    public let axes: [Int]?
    public let keepDims: Bool
    public init(kind: Kind, axes: [Int]?, keepDims: Bool) {
        self.kind = kind
        self.axes = axes
        self.keepDims = keepDims
    }

    func resolvedAxes(_ inputs: [ValueType], _ constants: [Tensor?]) throws -> Set<Int> {
        let r = inputs[0].shape.count
        var a = axes
        if a == nil, inputs.count > 1, inputs[1] != .absent {
            guard let c = constants[1] else { throw EngineError("axes must be constant") }
            a = c.int64Values().map { Int($0) }
        }
        let list = a ?? Array(0..<r)
        let norm = Set(list.map { $0 < 0 ? $0 + r : $0 })
        guard norm.allSatisfy({ $0 >= 0 && $0 < r }) else { throw EngineError("axes \(list) out of range for rank \(r)") }
        return norm
    }

    public func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType] {
        let ax = try resolvedAxes(inputs, constants)
        let d = inputs[0].shape
        let out = keepDims ? d.enumerated().map { ax.contains($0.offset) ? 1 : $0.element }
                           : d.enumerated().filter { !ax.contains($0.offset) }.map { $0.element }
        return [ValueType(out)]
    }

    public func makeKernel(_ ctx: KernelContext) throws -> any Kernel {
        guard let x = ctx.inputs[0] else { throw EngineError("missing input") }
        let d = x.shape.dims
        let types = ctx.inputs.map { t in t.map { ValueType($0.shape.dims, $0.dtype) } ?? .absent }
        let ax = try resolvedAxes(types, ctx.inputs)
        let outStrides = Shape(d.enumerated().map { ax.contains($0.offset) ? 1 : $0.element }).strides
        let inStrides = Shape(d).strides
        let total = x.count
        let out = ctx.outputs[0].f32, outCount = ctx.outputs[0].count
        let src = UnsafePointer(x.f32), kind = self.kind
        let count = Float(ax.reduce(1) { $0 * d[$1] })
        if let first = ax.min(), ax.count == d.count - first {
            // Trailing axes (global pooling written as ReduceMean over H, W): one contiguous run per output.
            let run = d[first...].reduce(1, *)
            return ClosureKernel { _ in
                for o in 0..<outCount {
                    switch kind {
                    case .max: out[o] = f32_reduce_max(src + o * run, count: run)
                    case .sum: out[o] = f32_reduce_sum(src + o * run, count: run)
                    case .mean: out[o] = f32_reduce_sum(src + o * run, count: run) / count
                    }
                }
            }
        }
        return ClosureKernel { _ in
            for i in 0..<outCount { out[i] = kind == .max ? -.infinity : 0 }
            for i in 0..<total {
                var rem = i, o = 0
                for k in 0..<d.count {
                    let idx = rem / inStrides[k]
                    rem -= idx * inStrides[k]
                    if !ax.contains(k) { o += idx * outStrides[k] }
                }
                if kind == .max { out[o] = max(out[o], src[i]) } else { out[o] += src[i] }
            }
            if kind == .mean { for i in 0..<outCount { out[i] /= count } }
        }
    }
}
