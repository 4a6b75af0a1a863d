@testable import GlimpseEngine
import GlimpseKernels
import GlimpseTensor
import Foundation
import XCTest

/// `FuseQuantizedConcat`: `DQ → Concat → [MaxPool] → Q` on uint8 values runs as requantization
/// tables, a uint8 Concat and a uint8 MaxPool, and gives bit for bit what the float graph gives.
final class QuantizedConcatTests: XCTestCase {
    let channels = 3, height = 13, width = 29
    /// Scale and zero point of each Concat input, then of the Q after it; the third input shares the
    /// output's (no table), the second saturates (a smaller range than the input's).
    let params: [(Float, Float)] = [(0.021, 120), (0.0093, 0), (0.037, 7)]
    let out: (Float, Float) = (0.037, 7)

    /// x → Q/DQ with each input's parameters → Concat (channels) → [MaxPool 3×3 stride 2, ceil mode,
    /// asymmetric padding] → Q → DQ → y.
    func graph(batch: Int, pool: Bool) -> Graph {
        let g = Graph(name: "concat")
        func scalar(_ v: Float) -> Int { g.addValue(name: "s\(g.values.count)", constant: Tensor(shape: [], floats: [v])) }
        func u8(_ v: Float) -> Int {
            let t = Tensor(shape: [], dtype: .uint8)
            t.rawPointer.storeBytes(of: UInt8(v), as: UInt8.self)
            return g.addValue(name: "z\(g.values.count)", constant: t)
        }
        let x = g.addValue(name: "x")
        g.inputs = [(x, TensorSpec(name: "x", shape: [batch, channels, height, width], dtype: .float32))]
        var parts: [Int] = []
        for (k, (s, z)) in params.enumerated() {
            let q = g.addValue(name: "q\(k)"), f = g.addValue(name: "f\(k)")
            let sv = scalar(s), zv = u8(z)
            g.nodes.append(Graph.Node(op: QuantizeOp(quantize: true, axis: 1), inputs: [x, sv, zv], outputs: [q], name: "q\(k)"))
            g.nodes.append(Graph.Node(op: QuantizeOp(quantize: false, axis: 1), inputs: [q, sv, zv], outputs: [f], name: "dq\(k)"))
            parts.append(f)
        }
        var c = g.addValue(name: "c")
        g.nodes.append(Graph.Node(op: ConcatOp(axis: 1), inputs: parts, outputs: [c], name: "concat"))
        if pool {
            let p = g.addValue(name: "p")
            let window = WindowAttributes(kernelShape: [3, 3], strides: [2, 2], pads: [1, 0, 0, 1], ceilMode: true)
            g.nodes.append(Graph.Node(op: PoolOp(opType: "MaxPool", kind: .max, window: window), inputs: [c], outputs: [p], name: "pool"))
            c = p
        }
        let yq = g.addValue(name: "yq"), y = g.addValue(name: "y")
        let sy = scalar(out.0), zy = u8(out.1)
        g.nodes.append(Graph.Node(op: QuantizeOp(quantize: true, axis: 1), inputs: [c, sy, zy], outputs: [yq], name: "qy"))
        g.nodes.append(Graph.Node(op: QuantizeOp(quantize: false, axis: 1), inputs: [yq, sy, zy], outputs: [y], name: "dqy"))
        g.outputs = [(y, .float32)]
        return g
    }

    func check(batch: Int, pool: Bool) throws {
        let g = graph(batch: batch, pool: pool)
        try GraphOptimizer.optimize(g)
        // The fusion runs only where the int8 kernels are accelerated (AVX2 or VNNI builds); elsewhere the
        // graph stays on its fp32 lowering and there is nothing of this pass to check. Every x86-64 build
        // here is an AVX2 one at least, so there the check must run.
#if arch(x86_64)
        XCTAssertTrue(int8KernelsAccelerated, "x86-64 builds compile the int8 kernels with AVX2 or VNNI")
#endif
        try XCTSkipUnless(int8KernelsAccelerated, "int8 kernels are not accelerated on this build: the graph keeps its fp32 lowering")
        XCTAssertEqual(g.nodes.filter { $0.op is U8RequantizeTableOp }.count, 2, "the third input needs no table")
        XCTAssertEqual(g.nodes.filter { $0.op is QuantizeOp }.map(\.name), ["dqy"], "only the output's DequantizeLinear is left")
        XCTAssertEqual(g.nodes.filter { $0.op is QuantizeU8Op }.map(\.name), ["q0", "q1", "q2"])
        let optimized = try CompiledModel(graph: g, options: EngineOptions(threads: 2))
        let plain = try CompiledModel(graph: graph(batch: batch, pool: pool), options: EngineOptions(threads: 1))
        for seed in 0..<3 {
            let n = batch * channels * height * width
            let input = (0..<n).map { Float(sin(Double($0 * 7 + seed * 131))) * 3.1 }
            let x = Tensor(shape: [batch, channels, height, width], floats: input)
            let fused = try optimized.run([x])[0], float = try plain.run([x])[0]
            XCTAssertEqual(fused.shape, float.shape)
            XCTAssertEqual(fused.floats(), float.floats(), "batch \(batch) pool \(pool) seed \(seed)")
        }
    }

    func testConcatThenMaxPoolIsBitExact() throws {
        try check(batch: 1, pool: true)
        try check(batch: 2, pool: true)
    }

    func testConcatAloneIsBitExact() throws {
        try check(batch: 1, pool: false)
        try check(batch: 2, pool: false)
    }
}
