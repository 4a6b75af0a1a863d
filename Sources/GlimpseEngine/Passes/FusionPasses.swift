import GlimpseTensor

/// Conv → Add(constant per-channel bias) becomes the Conv's bias.
public enum FuseConvBias {
    public static func run(_ graph: Graph) throws {
        var uses = graph.useCounts()
        let producers = graph.producers()
        var removed = Set<Int>()
        for (i, node) in graph.nodes.enumerated() {
            guard let add = node.op as? BinaryOp, add.kind == .add, add.activation.isIdentity else { continue }
            for (x, c) in [(node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])] {
                guard let p = producers[x], !removed.contains(p), uses[x] == 1,
                      let conv = graph.nodes[p].op as? ConvOp, conv.activation.isIdentity,
                      graph.nodes[p].inputs.count <= 3, let bias = graph.constant(c),
                      let w = graph.constant(graph.nodes[p].inputs[1]), bias.dtype == .float32 else { continue }
                let cout = w.shape[0]
                let dims = bias.shape.dims
                // Accept [C], [C,1,1], [1,C,1,1].
                let nonOne = dims.enumerated().filter { $0.element != 1 }
                guard bias.count == cout, nonOne.count <= 1, dims.count <= 4,
                      cout == 1 || dims.count == 1 || (dims.count >= 3 && nonOne.first?.offset == dims.count - 3) else { continue }
                let old = graph.nodes[p].inputs.count > 2 ? graph.constant(graph.nodes[p].inputs[2]) : nil
                let merged = Tensor(shape: Shape([cout]), dtype: .float32)
                for k in 0..<cout { merged.f32[k] = bias.f32[k] + (old?.f32[k] ?? 0) }
                let b = graph.addValue(name: graph.values[c].name + "_fused_bias", constant: merged)
                uses.append(1)
                if graph.nodes[p].inputs.count > 2 { graph.nodes[p].inputs[2] = b } else { graph.nodes[p].inputs.append(b) }
                graph.nodes[p].outputs = node.outputs
                removed.insert(i)
                break
            }
        }
        graph.nodes = graph.nodes.enumerated().filter { !removed.contains($0.offset) }.map { $0.element }
    }
}

/// Conv/Gemm/Add followed by Relu or a constant Clip: the bounds move into the producer's epilogue.
public enum FuseActivation {
    public static func run(_ graph: Graph) throws {
        let uses = graph.useCounts()
        let producers = graph.producers()
        var removed = Set<Int>()
        for (i, node) in graph.nodes.enumerated() {
            guard let act = node.op as? UnaryOp else { continue }
            let kind: GlimpseKernels_UnaryBounds
            do {
                guard let b = try? act.resolvedKind(node.inputs.map { graph.constant($0) }) else { continue }
                switch b {
                case .relu: kind = (0, .infinity)
                case .clip(let lo, let hi): kind = (lo, hi)
                default: continue
                }
            }
            if node.inputs.dropFirst().contains(where: { $0 != Graph.noValue && !graph.isConstant($0) }) { continue }
            let x = node.inputs[0]
            guard let p = producers[x], !removed.contains(p), uses[x] == 1, !graph.isGraphOutput(x) else { continue }
            let target = graph.nodes[p].op
            let current: Activation
            if let c = target as? ConvOp { current = c.activation }
            else if let g = target as? GemmOp { current = g.activation }
            else if let b = target as? BinaryOp, b.kind == .add { current = b.activation }
            else { continue }
            if current.swish { continue }  // the clamp would have to follow the swish
            let fused = Activation(lower: max(current.lower, kind.0), upper: min(current.upper, kind.1))
            if let c = target as? ConvOp { c.activation = fused }
            else if let g = target as? GemmOp { g.activation = fused }
            else if let b = target as? BinaryOp { b.activation = fused }
            graph.nodes[p].outputs = node.outputs
            removed.insert(i)
        }
        graph.nodes = graph.nodes.enumerated().filter { !removed.contains($0.offset) }.map { $0.element }
    }
}

typealias GlimpseKernels_UnaryBounds = (Float, Float)

/// Conv → Add(other activation of the same shape): the other operand becomes the Conv's residual,
/// added in the GEMM store (ResNet/MobileNet shortcuts).
public enum FuseResidualAdd {
    public static func run(_ graph: Graph) throws {
        let uses = graph.useCounts()
        let producers = graph.producers()
        var removed = Set<Int>()
        var position = [Int: Int]()
        for (i, n) in graph.nodes.enumerated() { for o in n.outputs { position[o] = i } }
        for (i, node) in graph.nodes.enumerated() {
            guard let add = node.op as? BinaryOp, add.kind == .add, node.inputs.count == 2 else { continue }
            for (x, other) in [(node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])] {
                guard !graph.isConstant(other), let p = producers[x], !removed.contains(p), uses[x] == 1,
                      let conv = graph.nodes[p].op as? ConvOp, conv.activation.isIdentity, conv.outputScale == nil,
                      graph.nodes[p].inputs.count <= 3 else { continue }
                // The residual must be computed before the conv runs.
                if let op = position[other], op > p { continue }
                while graph.nodes[p].inputs.count < 3 { graph.nodes[p].inputs.append(Graph.noValue) }
                graph.nodes[p].inputs.append(other)
                conv.activation = add.activation
                graph.nodes[p].outputs = node.outputs
                removed.insert(i)
                break
            }
        }
        graph.nodes = graph.nodes.enumerated().filter { !removed.contains($0.offset) }.map { $0.element }
    }
}

/// Conv → MaxPool, where the pool is the convolution's only reader: the pool moves into the
/// convolution (`ConvOp.pool`), which can then compute its output a band of rows at a time and
/// pool each band while it is in cache, instead of writing the whole output and reading it back
/// (SqueezeNet's first layer writes 3.2 MB that its pool reduces to 0.8 MB).
public enum FuseMaxPool {
    public static func run(_ graph: Graph) {
        let uses = graph.useCounts()
        let producers = graph.producers()
        var removed = Set<Int>()
        for (i, node) in graph.nodes.enumerated() {
            guard let pool = node.op as? PoolOp, case .max = pool.kind, pool.window.kernelShape?.count == 2,
                  pool.window.dilations.allSatisfy({ $0 == 1 }),
                  node.outputs.dropFirst().allSatisfy({ uses[$0] == 0 && !graph.isGraphOutput($0) }) else { continue }
            let x = node.inputs[0]
            guard let p = producers[x], !removed.contains(p), uses[x] == 1, !graph.isGraphOutput(x),
                  let conv = graph.nodes[p].op as? ConvOp, conv.pool == nil, conv.group == 1, conv.outputScale == nil,
                  graph.nodes[p].inputs.count <= 3 else { continue }
            conv.pool = pool.window
            graph.nodes[p].outputs = [node.outputs[0]]
            removed.insert(i)
        }
        graph.nodes = graph.nodes.enumerated().filter { !removed.contains($0.offset) }.map { $0.element }
    }
}

/// Mul(x, s) → 1×1 Conv, where s is a per-channel scale of x (squeeze-and-excitation: s comes from
/// a global pooling through 1×1 convolutions and activations): the scale becomes the convolution's
/// fifth input, multiplied into each input channel as the GEMM packs it, which saves a pass over x.
public enum FuseChannelScale {
    public static func run(_ graph: Graph) {
        let uses = graph.useCounts()
        let producers = graph.producers()
        var removed = Set<Int>()
        for (i, node) in graph.nodes.enumerated() {
            guard let conv = node.op as? ConvOp, conv.group == 1, conv.outputScale == nil, node.inputs.count <= 4,
                  let w = graph.constant(node.inputs[1]), w.shape.rank == 4, w.shape[2] == 1, w.shape[3] == 1,
                  conv.window.strides.allSatisfy({ $0 == 1 }), conv.window.pads.allSatisfy({ $0 == 0 }),
                  conv.window.autoPad == .notSet || conv.window.autoPad == .valid else { continue }
            let y = node.inputs[0]
            guard uses[y] == 1, !graph.isGraphOutput(y), let p = producers[y], !removed.contains(p),
                  let mul = graph.nodes[p].op as? BinaryOp, mul.kind == .mul, mul.activation.isIdentity,
                  graph.nodes[p].inputs.count == 2 else { continue }
            let operands = graph.nodes[p].inputs
            for (x, s) in [(operands[0], operands[1]), (operands[1], operands[0])] {
                guard !graph.isConstant(x), !graph.isConstant(s),
                      channelScaleWidth(s, graph: graph, producers: producers) == w.shape[1] else { continue }
                var inputs = node.inputs
                inputs[0] = x
                while inputs.count < 4 { inputs.append(Graph.noValue) }
                inputs.append(s)
                graph.nodes[i].inputs = inputs
                removed.insert(p)
                break
            }
        }
        graph.nodes = graph.nodes.enumerated().filter { !removed.contains($0.offset) }.map { $0.element }
    }

    /// The channel count of `s` when it is provably [N, C, 1, 1]: a global pooling followed by
    /// element-wise activations and 1×1 unpadded convolutions (the last of which gives C); nil
    /// otherwise.
    static func channelScaleWidth(_ s: Int, graph: Graph, producers: [Int?]) -> Int? {
        var value = s
        var channels: Int?
        for _ in 0..<8 {
            guard let p = producers[value] else { return nil }
            let node = graph.nodes[p]
            switch node.op {
            case is GlobalPoolOp:
                return channels
            case is UnaryOp:
                break
            case let conv as ConvOp:
                guard let w = graph.constant(node.inputs[1]), w.shape.rank == 4, w.shape[2] == 1, w.shape[3] == 1,
                      conv.window.pads.allSatisfy({ $0 == 0 }),
                      conv.window.autoPad == .notSet || conv.window.autoPad == .valid else { return nil }
                channels = channels ?? w.shape[0]
            default:
                return nil
            }
            value = node.inputs[0]
        }
        return nil
    }
}
