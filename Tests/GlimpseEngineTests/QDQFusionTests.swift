@testable import GlimpseEngine
import GlimpseTensor
import Foundation
import XCTest

/// `FuseQDQ`: a QDQ convolution becomes a QLinearConv whose output equals integer arithmetic
/// (exact sums, one requantization by sx·sw/sy), as onnxruntime computes it; a value-preserving op
/// between two equal Q/DQ pairs runs on the quantized values.
final class QDQFusionTests: XCTestCase {
    let sx: Float = 0.021, zx: Float = 120       // uint8 input
    let sw: [Float] = [0.0113, 0.0071, 0.0152, 0.0094]
    let sy: Float = 0.037, zy: Float = 7          // uint8 output
    let cin = 3, cout = 4, side = 5

    func values(_ n: Int, seed: Int) -> [Float] {
        (0..<n).map { Float(sin(Double($0 * 13 + seed * 101))) }
    }

    var weights: [Int8] { values(cout * cin * 9, seed: 2).map { Int8(($0 * 127).rounded()) } }
    var bias: [Int32] { values(cout, seed: 3).map { Int32(($0 * 3000).rounded()) } }

    /// x → Q → DQ → Conv 3×3 pad 1 (DQ(w int8, per channel), DQ(b int32, scale sx·sw)) → Q → DQ →
    /// Reshape → Q → DQ → y. With `biasScale`, the bias has that scale instead of sx·sw.
    func graph(biasScale: [Float]? = nil, weightScales: [Float]? = nil) throws -> Graph {
        let g = Graph(name: "qdq")
        func const(_ name: String, _ t: Tensor) -> Int { g.addValue(name: name, constant: t) }
        func scalar(_ v: Float) -> Tensor { Tensor(shape: [], floats: [v]) }
        func u8(_ v: Float) -> Tensor {
            let t = Tensor(shape: [], dtype: .uint8)
            t.rawPointer.storeBytes(of: UInt8(v), as: UInt8.self)
            return t
        }
        let w = Tensor(shape: [cout, cin, 3, 3], dtype: .int8)
        weights.withUnsafeBytes { w.rawPointer.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        let b = Tensor(shape: [cout], dtype: .int32)
        bias.withUnsafeBytes { b.rawPointer.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        let ws = weightScales ?? sw
        let wz = Tensor(shape: [ws.count], dtype: .int8)
        let bz = Tensor(shape: [cout], dtype: .int32)
        let bs = biasScale ?? sw.map { sx * $0 }

        let x = g.addValue(name: "x"), xq = g.addValue(name: "xq"), xf = g.addValue(name: "xf")
        let wf = g.addValue(name: "wf"), bf = g.addValue(name: "bf"), c = g.addValue(name: "c")
        let cq = g.addValue(name: "cq"), cf = g.addValue(name: "cf"), r = g.addValue(name: "r")
        let rq = g.addValue(name: "rq"), y = g.addValue(name: "y")
        let sxv = const("sx", scalar(sx)), zxv = const("zx", u8(zx)), syv = const("sy", scalar(sy)), zyv = const("zy", u8(zy))
        let shape = Tensor(shape: [2], dtype: .int64)
        shape.rawPointer.storeBytes(of: Int64(1), as: Int64.self)
        shape.rawPointer.storeBytes(of: Int64(cout * side * side), toByteOffset: 8, as: Int64.self)
        g.inputs = [(x, TensorSpec(name: "x", shape: [1, cin, side, side], dtype: .float32))]
        g.nodes = [
            Graph.Node(op: QuantizeOp(quantize: true, axis: 1), inputs: [x, sxv, zxv], outputs: [xq], name: "qx"),
            Graph.Node(op: QuantizeOp(quantize: false, axis: 1), inputs: [xq, sxv, zxv], outputs: [xf], name: "dqx"),
            Graph.Node(op: QuantizeOp(quantize: false, axis: 0),
                       inputs: [const("w", w), const("ws", Tensor(shape: [ws.count], floats: ws)), const("wz", wz)], outputs: [wf], name: "dqw"),
            Graph.Node(op: QuantizeOp(quantize: false, axis: 0),
                       inputs: [const("b", b), const("bs", Tensor(shape: [cout], floats: bs)), const("bz", bz)], outputs: [bf], name: "dqb"),
            Graph.Node(op: ConvOp(window: WindowAttributes(kernelShape: [3, 3], pads: [1, 1, 1, 1]), group: 1),
                       inputs: [xf, wf, bf], outputs: [c], name: "conv"),
            Graph.Node(op: QuantizeOp(quantize: true, axis: 1), inputs: [c, syv, zyv], outputs: [cq], name: "qc"),
            Graph.Node(op: QuantizeOp(quantize: false, axis: 1), inputs: [cq, syv, zyv], outputs: [cf], name: "dqc"),
            Graph.Node(op: ViewOp(opType: "Reshape", kind: .reshape(shape: nil)), inputs: [cf, const("shape", shape)], outputs: [r], name: "reshape"),
            Graph.Node(op: QuantizeOp(quantize: true, axis: 1), inputs: [r, syv, zyv], outputs: [rq], name: "qr"),
            Graph.Node(op: QuantizeOp(quantize: false, axis: 1), inputs: [rq, syv, zyv], outputs: [y], name: "dqr"),
        ]
        g.outputs = [(y, .float32)]
        return g
    }

    /// The same computation in integers: xq = clamp(round(x/sx)) − zx (centered), acc = Σ xq·w + b,
    /// yq = clamp(round(acc · (sx·sw/sy))), y = yq · sy.
    func reference(_ input: [Float]) -> [Float] {
        let xq = input.map { min(max(($0 / sx).rounded(.toNearestOrEven), -zx), 255 - zx) }
        var out = [Float](repeating: 0, count: cout * side * side)
        let w = weights, b = bias
        for o in 0..<cout {
            let scale = (sx * sw[o]) / sy
            for py in 0..<side {
                for px in 0..<side {
                    var acc = Int(b[o])
                    for i in 0..<cin {
                        for ky in 0..<3 {
                            for kx in 0..<3 {
                                let yy = py + ky - 1, xx = px + kx - 1
                                guard yy >= 0, yy < side, xx >= 0, xx < side else { continue }
                                acc += Int(xq[(i * side + yy) * side + xx]) * Int(w[((o * cin + i) * 3 + ky) * 3 + kx])
                            }
                        }
                    }
                    let q = min(max((Float(acc) * scale).rounded(.toNearestOrEven), -zy), 255 - zy)
                    out[(o * side + py) * side + px] = q * sy
                }
            }
        }
        return out
    }

    func testConvolutionRunsInIntegersAndTheReshapeOnQuantizedValues() throws {
        let g = try graph()
        try GraphOptimizer.optimize(g)
        // The fused QLinearConv runs as an int8 operator (uint8 activations, requantized in its store).
        XCTAssertEqual(g.nodes.filter { $0.op is Int8ConvOp }.count, 1)
        XCTAssertTrue(g.nodes.allSatisfy { !($0.op is ConvOp) })
        let quantizers = g.nodes.filter { $0.op is QuantizeOp || $0.op is QuantizeU8Op }.map(\.name)
        XCTAssertEqual(quantizers, ["qx", "dqr"], "only the input's Q and the output's DQ are left")
        XCTAssertTrue(g.nodes.first { $0.name == "qx" }?.op is QuantizeU8Op, "the input is quantized to uint8")
        XCTAssertEqual(g.notes, ["1 quantized nodes run in int8, 0 in fp32"])

        let model = try CompiledModel(graph: g, options: EngineOptions(threads: 1))
        for seed in 0..<4 {
            let input = values(cin * side * side, seed: 10 + seed).map { $0 * 2.7 }
            let out = try model.run([Tensor(shape: [1, cin, side, side], floats: input)])[0].floats()
            XCTAssertEqual(out, reference(input), "seed \(seed)")
        }
    }

    func testBiasWithAnotherScaleIsConverted() throws {
        // The bias written in units of 2·sx·sw: the integers are doubled before the sum.
        let g = try graph(biasScale: sw.map { 2 * sx * $0 })
        try GraphOptimizer.optimize(g)
        let model = try CompiledModel(graph: g, options: EngineOptions(threads: 1))
        let input = values(cin * side * side, seed: 20)
        let out = try model.run([Tensor(shape: [1, cin, side, side], floats: input)])[0].floats()
        let plain = try graph()
        try GraphOptimizer.optimize(plain)
        let same = try CompiledModel(graph: plain, options: EngineOptions(threads: 1))
            .run([Tensor(shape: [1, cin, side, side], floats: input)])[0].floats()
        XCTAssertNotEqual(out, same, "the doubled bias must change the result")
        var doubled = 0
        for (a, b) in zip(out, same) where abs(a - b) > sy / 2 { doubled += 1 }
        XCTAssertGreaterThan(doubled, 0)
    }

    func testPerChannelScalesMustMatchTheirAxis() throws {
        let g = try graph(weightScales: [0.01, 0.02, 0.03])   // 3 scales for 4 output channels
        XCTAssertThrowsError(try GraphOptimizer.optimize(g)) { error in
            XCTAssertTrue("\(error)".contains("3 scales do not match axis 0 of input shape [4, 3, 3, 3]"), "\(error)")
        }
    }
}
