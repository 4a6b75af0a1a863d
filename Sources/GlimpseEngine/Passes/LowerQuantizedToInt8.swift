import GlimpseKernels
import GlimpseTensor

/// Quantized operators → int8 operators on uint8 activations, node by node:
///
/// - QuantizeLinear (per tensor, uint8) → `QuantizeU8Op`;
/// - QLinearConv (uint8 activations, int8 weights with zero point 0; group 1 or depthwise) →
///   `Int8ConvOp`; QLinearMatMul (constant int8 `[K, N]` weights) → `Int8MatMulOp`;
/// - QLinearAdd, QLinearGlobalAveragePool (per tensor, uint8) → `Int8AddOp`,
///   `Int8GlobalAveragePoolOp`;
/// - views (Reshape, Flatten, ...) and MaxPool (2-D, the `PoolOp` uint8 kernel) keep uint8 values
///   uint8 with their zero point, and DequantizeLinear reads them.
///
/// Any other node is left to the fp32 lowering (`LowerQuantizedOps`), which represents quantized
/// values as centered floats `q − zp`; `U8CenteredConvertOp` nodes convert where the two meet. Each
/// quantized node left in fp32 is named, with the reason, in `Graph.notes`.
///
/// Runs after constant folding (weights are then plain int8 constants) and before `LowerQuantizedOps`.
/// Returns the values it left in uint8 storage, with their zero points.
public enum LowerQuantizedToInt8 {
    struct Unsupported: Error { let reason: String; init(_ r: String) { reason = r } }

    @discardableResult
    public static func run(_ graph: Graph, enabled: Bool = int8KernelsAccelerated) -> [Int: Int32] {
        guard enabled else {
            if graph.nodes.contains(where: { $0.op is QLinearPlaceholderOp || $0.op is QLinearAddOp }) {
                graph.notes.append("quantized nodes run on the fp32 lowering: this build has no int8 kernels (neither AVX-512 VNNI nor AVX2)")
            }
            return [:]
        }
        var zeroPoint = [Int: Int32]()   // values held as uint8 → their zero point
        var nodes: [Graph.Node] = []
        nodes.reserveCapacity(graph.nodes.count)
        var fallbacks: [String] = []
        var converted = [Int: Int]()   // value → its converted copy (one converter per value)

        /// Input `v` as uint8 (converting a centered float value with zero point `zp`).
        func asU8(_ v: Int, zp: Int32, name: String) -> Int {
            if zeroPoint[v] != nil || graph.isConstant(v) { return v }
            if let c = converted[v] { return c }
            let out = graph.addValue(name: graph.values[v].name + "_u8")
            converted[v] = out
            nodes.append(Graph.Node(op: U8CenteredConvertOp(toU8: true, zeroPoint: zp), inputs: [v], outputs: [out], name: name + "_to_u8"))
            zeroPoint[out] = zp
            return out
        }
        /// Input `v` as a centered float (converting a uint8 value).
        func asCentered(_ v: Int, name: String) -> Int {
            guard let zp = zeroPoint[v] else { return v }
            if let c = converted[v] { return c }
            let out = graph.addValue(name: graph.values[v].name + "_centered")
            converted[v] = out
            nodes.append(Graph.Node(op: U8CenteredConvertOp(toU8: false, zeroPoint: zp), inputs: [v], outputs: [out], name: name + "_centered"))
            return out
        }

        for var node in graph.nodes {
            do {
                if let (op, activationInputs, zpOut) = try int8Op(graph, node, zeroPoint) {
                    for (j, zp) in activationInputs { node.inputs[j] = asU8(node.inputs[j], zp: zp, name: node.name) }
                    node.op = op
                    nodes.append(node)
                    zeroPoint[node.outputs[0]] = zpOut
                    continue
                }
            } catch let e as Unsupported {
                fallbacks.append("\(node.label): fp32 (\(e.reason))")
            } catch {
                fallbacks.append("\(node.label): fp32 (\(error))")
            }
            if node.op.isView || isMaxPool2D(node.op), let first = node.inputs.first, let zp = zeroPoint[first],
               node.outputs.count == 1 {
                zeroPoint[node.outputs[0]] = zp
                nodes.append(node)
                continue
            }
            if let q = node.op as? QuantizeOp, !q.isQuantize, let first = node.inputs.first, zeroPoint[first] != nil,
               node.inputs.count >= 2, let p = try? QuantParams(scale: graph.constant(node.inputs[1]),
                                                                 zeroPoint: node.inputs.count > 2 ? graph.constant(node.inputs[2]) : nil, what: ""),
               p.isPerTensor {
                nodes.append(node)
                continue
            }
            for j in node.inputs.indices where node.inputs[j] != Graph.noValue {
                node.inputs[j] = asCentered(node.inputs[j], name: node.name)
            }
            nodes.append(node)
        }
        // Graph outputs keep the fp32 lowering's representation.
        for i in graph.outputs.indices where zeroPoint[graph.outputs[i].value] != nil {
            let v = graph.outputs[i].value
            graph.outputs[i].value = asCentered(v, name: graph.values[v].name)
        }
        graph.nodes = nodes
        if !zeroPoint.isEmpty {
            let int8 = graph.nodes.filter { $0.op is Int8ConvOp || $0.op is Int8MatMulOp || $0.op is Int8AddOp
                || $0.op is Int8GlobalAveragePoolOp }.count
            graph.notes.append("\(int8) quantized nodes run in int8, \(fallbacks.count) in fp32")
        }
        graph.notes.append(contentsOf: fallbacks)
        return zeroPoint
    }

    /// A 2-D MaxPool, which `PoolOp` runs on uint8 values as they are.
    static func isMaxPool2D(_ op: any Operator) -> Bool {
        guard let pool = op as? PoolOp, case .max = pool.kind else { return false }
        return pool.window.kernelShape?.count == 2
    }

    static func params(_ graph: Graph, _ node: Graph.Node, _ s: Int, _ z: Int, _ what: String) throws -> QuantParams {
        guard s < node.inputs.count else { throw Unsupported("missing \(what) scale") }
        let zp = z < node.inputs.count ? node.inputs[z] : Graph.noValue
        guard graph.isConstant(node.inputs[s]), zp == Graph.noValue || graph.isConstant(zp) else {
            throw Unsupported("\(what) scale and zero point must be constants")
        }
        do {
            return try QuantParams(scale: graph.constant(node.inputs[s]), zeroPoint: graph.constant(zp), what: what)
        } catch let e as EngineError {
            throw Unsupported(e.description)
        }
    }

    /// Per-tensor uint8 parameters of an activation; its zero point.
    static func activation(_ p: QuantParams, _ what: String) throws -> Int32 {
        guard p.isPerTensor, p.zeroPoints.count == 1 else { throw Unsupported("\(what) is quantized per channel") }
        guard p.dtype == .uint8 else { throw Unsupported("\(what) is \(p.dtype.rawValue), not uint8") }
        guard p.scales[0].isFinite, p.scales[0] > 0 else { throw Unsupported("\(what) scale is not positive") }
        return Int32(p.zeroPoint(0))
    }

    /// The int8 operator for `node`, the inputs to give as uint8 (with their zero points) and the
    /// output's zero point; nil for nodes that are not quantized operators.
    static func int8Op(_ graph: Graph, _ node: Graph.Node, _ zeroPoint: [Int: Int32]) throws
        -> (any Operator, [(Int, Int32)], Int32)? {
        switch node.op {
        case let q as QuantizeOp where q.isQuantize:
            guard node.inputs.count >= 2, !graph.isConstant(node.inputs[0]), zeroPoint[node.inputs[0]] == nil else { return nil }
            let p = try params(graph, node, 1, 2, "output")
            let zp = try activation(p, "output")
            return (QuantizeU8Op(scale: p.scales[0], zeroPoint: zp), [], zp)
        case let q as QLinearPlaceholderOp:
            guard node.inputs.count >= 8 else { throw Unsupported("expects at least 8 inputs") }
            let px = try params(graph, node, 1, 2, "input"), pw = try params(graph, node, 4, 5, "weight")
            let py = try params(graph, node, 6, 7, "output")
            let zx = try activation(px, "input"), zy = try activation(py, "output")
            guard let w = graph.constant(node.inputs[3]) else { throw Unsupported("weights are not constant") }
            guard w.dtype == .int8 else { throw Unsupported("weights are \(w.dtype.rawValue), not int8") }
            guard pw.zeroPoints.allSatisfy({ $0 == 0 }) else { throw Unsupported("weight zero point is not 0") }
            guard pw.scales.allSatisfy({ $0.isFinite && $0 > 0 }) else { throw Unsupported("weight scale is not positive") }
            let isConv = q.opType == "QLinearConv"
            let channels = isConv ? (w.shape.rank == 4 ? w.shape[0] : 0) : (w.shape.rank == 2 ? w.shape[1] : 0)
            guard channels > 0 else { throw Unsupported("weights have shape \(w.shape)") }
            guard pw.isPerTensor || pw.scales.count == channels else { throw Unsupported("weight scales do not match the channels") }
            let scales = (0..<channels).map { ch in (px.scale(0) * pw.scale(ch)) / py.scale(0) }
            if isConv {
                var bias = [Int32](repeating: 0, count: channels)
                if node.inputs.count > 8, node.inputs[8] != Graph.noValue {
                    guard let b = graph.constant(node.inputs[8]), b.count == channels else { throw Unsupported("bias is not a constant per channel") }
                    switch b.dtype {
                    case .int32:
                        let p = b.pointer(as: Int32.self)
                        for c in 0..<channels { bias[c] = p[c] }
                    case .float32:
                        let p = b.f32
                        for c in 0..<channels {
                            let v = p[c].rounded(.toNearestOrEven)
                            guard v.isFinite, abs(v) < 2e9 else { throw Unsupported("bias out of range") }
                            bias[c] = Int32(v)
                        }
                    default: throw Unsupported("bias is \(b.dtype.rawValue)")
                    }
                }
                do {
                    let op = try Int8ConvOp(window: q.window, group: q.group, weights: w, inputZeroPoint: UInt8(zx),
                                            requantization: Requantization(bias: bias, scale: scales, zeroPoint: zy))
                    return (op, [(0, zx)], zy)
                } catch let e as EngineError {
                    throw Unsupported(e.description)
                }
            }
            do {
                return (try Int8MatMulOp(weights: w, inputZeroPoint: UInt8(zx), scales: scales, outputZeroPoint: zy), [(0, zx)], zy)
            } catch let e as EngineError {
                throw Unsupported(e.description)
            }
        case is QLinearAddOp:
            guard node.inputs.count >= 8 else { throw Unsupported("expects 8 inputs") }
            let pa = try params(graph, node, 1, 2, "A"), pb = try params(graph, node, 4, 5, "B"), py = try params(graph, node, 6, 7, "Y")
            let za = try activation(pa, "A"), zb = try activation(pb, "B"), zy = try activation(py, "Y")
            for j in [0, 3] {
                if let c = graph.constant(node.inputs[j]), c.dtype != .uint8 { throw Unsupported("constant operand is \(c.dtype.rawValue)") }
            }
            let add = QU8Add(ra: pa.scales[0] / py.scales[0], za: za, rb: pb.scales[0] / py.scales[0], zb: zb, zy: zy)
            return (Int8AddOp(add: add), [(0, za), (3, zb)], zy)
        case is QLinearGlobalAveragePoolOp:
            guard node.inputs.count >= 5 else { throw Unsupported("expects 5 inputs") }
            let px = try params(graph, node, 1, 2, "X"), py = try params(graph, node, 3, 4, "Y")
            let zx = try activation(px, "X"), zy = try activation(py, "Y")
            let op = Int8GlobalAveragePoolOp(inputScale: px.scales[0], inputZeroPoint: zx, outputScale: py.scales[0], outputZeroPoint: zy)
            return (op, [(0, zx)], zy)
        default:
            return nil
        }
    }
}
