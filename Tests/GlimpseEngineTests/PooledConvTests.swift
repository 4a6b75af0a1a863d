@testable import GlimpseEngine
import GlimpseKernels
import GlimpseTensor
import GlimpseTestSupport
import XCTest

/// Conv → Relu → MaxPool fused by `FuseMaxPool`: banded (phase planes, shifted planes, pointwise)
/// and whole (short reductions, small outputs), with padded, ceil-mode and 2×2 pools, one and two
/// threads, one and two images, against the scalar references. Also the residual that a
/// convolution's output overwrites in place (`Operator.inPlaceInput`).
final class PooledConvTests: XCTestCase {
    private struct Case {
        let cin, cout, h, w, kernel, stride, pad: Int
        var pool = 3, poolStride = 2, poolPad = 0, ceil = false
        let banded: Bool
    }

    private func values(_ n: Int, _ seed: Int) -> [Float] {
        (0..<n).map { Float(sin(Double($0 * 13 + seed * 101))) }
    }

    private func check(_ c: Case, batch: Int, threads: Int) throws {
        let window = WindowAttributes(strides: [c.stride, c.stride], pads: [c.pad, c.pad, c.pad, c.pad])
        let poolWindow = WindowAttributes(kernelShape: [c.pool, c.pool], strides: [c.poolStride, c.poolStride],
                                          pads: [c.poolPad, c.poolPad, c.poolPad, c.poolPad], ceilMode: c.ceil)
        let g = try window.geometry(channels: c.cin, h: c.h, w: c.w, kernel: [c.kernel, c.kernel])
        let p = try poolWindow.geometry(channels: c.cout, h: g.outHeight, w: g.outWidth, kernel: [c.pool, c.pool])
        let fused = PooledConv(conv: g, pool: p, channels: c.cout, batch: batch, threads: threads, depthwise: false, group: 1)
        XCTAssertEqual(fused.banded, c.banded, "\(c)")
        // The rows the pool reads: up to the last window's last row.
        let lastRow = (p.outHeight - 1) * p.strideH - p.padTop + p.kernelHeight - 1
        XCTAssertEqual(fused.convRowsRead, min(g.outHeight, lastRow + 1), "\(c)")

        let graph = Graph(name: "pooled")
        let conv = ConvOp(window: window, group: 1)
        let relu = UnaryOp(opType: "Relu", kind: .relu)
        let pool = PoolOp(opType: "MaxPool", kind: .max, window: poolWindow)
        let weights = values(c.cout * g.patchSize, 1), bias = values(c.cout, 2)
        let x = graph.addValue(name: "x"), y = graph.addValue(name: "y"), r = graph.addValue(name: "r")
        let z = graph.addValue(name: "z")
        let w = graph.addValue(name: "w", constant: Tensor(shape: [c.cout, c.cin, c.kernel, c.kernel], floats: weights))
        let b = graph.addValue(name: "b", constant: Tensor(shape: [c.cout], floats: bias))
        graph.inputs = [(x, TensorSpec(name: "x", shape: [-1, c.cin, c.h, c.w], dtype: .float32))]
        graph.nodes = [Graph.Node(op: conv, inputs: [x, w, b], outputs: [y], name: "conv"),
                       Graph.Node(op: relu, inputs: [y], outputs: [r], name: "relu"),
                       Graph.Node(op: pool, inputs: [r], outputs: [z], name: "pool")]
        graph.outputs = [(z, .float32)]
        try GraphOptimizer.optimize(graph)
        XCTAssertEqual(graph.nodes.count, 1, "\(c): not fused")
        XCTAssertNotNil(conv.pool)

        let image = c.cin * g.inPixels
        let input = values(batch * image, 3)
        let plan = try ExecutionPlan(graph: graph, batch: batch, threads: threads)
        XCTAssertEqual(plan.outputTensors[0].shape.dims, [batch, c.cout, p.outHeight, p.outWidth])
        plan.inputTensors[0].f32.update(from: input, count: input.count)
        plan.execute(ThreadPool(threads: threads))
        let got = plan.outputTensors[0].floats()

        let convolved = referenceConvolution(input, weights: weights, bias: bias, geometry: g, outChannels: c.cout,
                                             batch: batch, lower: 0)
        var expected = [Float](repeating: 0, count: batch * c.cout * p.outPixels)
        convolved.withUnsafeBufferPointer { conv in expected.withUnsafeMutableBufferPointer { pooled in
            guard let conv = conv.baseAddress, let pooled = pooled.baseAddress else { return }
            for plane in 0..<(batch * c.cout) {
                f32_pool2d_reference(input: conv + plane * g.outPixels, output: pooled + plane * p.outPixels, geometry: p, kind: .max)
            }
        } }
        guard got.count == expected.count else { return XCTFail("\(c): \(got.count) outputs, expected \(expected.count)") }
        XCTAssertLessThan(relativeError(got, expected), 1e-5, "\(c), batch \(batch), \(threads) threads")
    }

    func testFusedMaxPoolMatchesReference() throws {
        let cases = [
            // SqueezeNet's first layer: phase planes, 111 × 111 → 55 × 55, bands overlapping by a row.
            Case(cin: 3, cout: 64, h: 224, w: 224, kernel: 3, stride: 2, pad: 0, banded: true),
            // A ResNet-style stem: 7×7 phase planes, then a padded 3×3 pool (first band padded).
            Case(cin: 3, cout: 48, h: 180, w: 180, kernel: 7, stride: 2, pad: 3, poolPad: 1, banded: true),
            // Shifted planes (3×3, stride 1, "same", a reduction too long for `f32_conv_8x16_direct`), 2×2 pool.
            Case(cin: 16, cout: 48, h: 75, w: 75, kernel: 3, stride: 1, pad: 1, pool: 2, banded: true),
            // Pointwise, a ceil-mode pool whose last window hangs past the plane.
            Case(cin: 8, cout: 64, h: 66, w: 66, kernel: 1, stride: 1, pad: 0, ceil: true, banded: true),
            // A short reduction (`f32_conv_8x16_direct`) and a small output: both whole.
            Case(cin: 1, cout: 40, h: 90, w: 90, kernel: 5, stride: 1, pad: 2, pool: 2, banded: false),
            Case(cin: 8, cout: 16, h: 20, w: 20, kernel: 3, stride: 1, pad: 1, banded: false),
            // mnist-8's second layer and pool: the 3×3 windows at stride 3 read rows 0..<12 of 14,
            // so the last rows' blocks are not computed. Its first layer (through the shifted
            // copies) with the same pool: rows 0..<27 of 28.
            Case(cin: 8, cout: 16, h: 14, w: 14, kernel: 5, stride: 1, pad: 2, pool: 3, poolStride: 3, banded: false),
            Case(cin: 1, cout: 8, h: 28, w: 28, kernel: 5, stride: 1, pad: 2, pool: 3, poolStride: 3, banded: false),
        ]
        for c in cases {
            try check(c, batch: 1, threads: 1)
            try check(c, batch: 1, threads: 2)
            try check(c, batch: 2, threads: 2)
        }
    }

    /// The pool stays a node of its own when the convolution's output has another reader.
    func testMaxPoolOfASharedOutputIsNotFused() throws {
        let graph = Graph(name: "shared")
        let conv = ConvOp(window: WindowAttributes(), group: 1)
        let x = graph.addValue(name: "x"), y = graph.addValue(name: "y"), z = graph.addValue(name: "z")
        let w = graph.addValue(name: "w", constant: Tensor(shape: [4, 2, 1, 1], floats: values(8, 1)))
        graph.inputs = [(x, TensorSpec(name: "x", shape: [1, 2, 8, 8], dtype: .float32))]
        graph.nodes = [Graph.Node(op: conv, inputs: [x, w], outputs: [y], name: "conv"),
                       Graph.Node(op: PoolOp(opType: "MaxPool", kind: .max, window: WindowAttributes(kernelShape: [2, 2], strides: [2, 2])),
                                  inputs: [y], outputs: [z], name: "pool")]
        graph.outputs = [(z, .float32), (y, .float32)]
        try GraphOptimizer.optimize(graph)
        XCTAssertEqual(graph.nodes.count, 2)
        XCTAssertNil(conv.pool)
    }

    /// a = conv1(x), c = conv2(x), y = conv3(c) + a: `a` is last read as conv3's residual, so y takes
    /// over its buffer, where conv3's reduction is one K block; with a longer one it cannot (the
    /// first block's partial sums would overwrite the residual before it is added).
    func testResidualIsOverwrittenInPlaceOnlyWithOneKBlock() throws {
        for (mid, inPlace) in [(64, true), (300, false)] {
            let graph = Graph(name: "inplace")
            let ops = (0..<3).map { _ in ConvOp(window: WindowAttributes(), group: 1) }
            let x = graph.addValue(name: "x"), a = graph.addValue(name: "a"), c = graph.addValue(name: "c")
            let s = graph.addValue(name: "s"), y = graph.addValue(name: "y")
            let w1 = values(32 * 8, 1), w2 = values(mid * 8, 2), w3 = values(32 * mid, 3)
            let w = [graph.addValue(name: "w1", constant: Tensor(shape: [32, 8, 1, 1], floats: w1)),
                     graph.addValue(name: "w2", constant: Tensor(shape: [mid, 8, 1, 1], floats: w2)),
                     graph.addValue(name: "w3", constant: Tensor(shape: [32, mid, 1, 1], floats: w3))]
            graph.inputs = [(x, TensorSpec(name: "x", shape: [1, 8, 20, 20], dtype: .float32))]
            graph.nodes = [Graph.Node(op: ops[0], inputs: [x, w[0]], outputs: [a], name: "conv1"),
                           Graph.Node(op: ops[1], inputs: [x, w[1]], outputs: [c], name: "conv2"),
                           Graph.Node(op: ops[2], inputs: [c, w[2]], outputs: [s], name: "conv3"),
                           Graph.Node(op: BinaryOp(kind: .add), inputs: [s, a], outputs: [y], name: "add")]
            graph.outputs = [(y, .float32)]
            try GraphOptimizer.optimize(graph)
            XCTAssertEqual(graph.nodes.count, 3, "the add was not fused")
            let plan = try ExecutionPlan(graph: graph, batch: 1, threads: 2)
            let shared = plan.tensor(of: a).map { $0.f32 == plan.outputTensors[0].f32 } ?? false
            XCTAssertEqual(shared, inPlace, "mid \(mid)")
            let input = values(8 * 400, 4)
            plan.inputTensors[0].f32.update(from: input, count: input.count)
            plan.execute(ThreadPool(threads: 2))
            let got = plan.outputTensors[0].floats()
            for pixel in stride(from: 0, to: 400, by: 7) {
                for o in stride(from: 0, to: 32, by: 5) {
                    var first: Float = 0, last: Float = 0
                    for i in 0..<8 { first += w1[o * 8 + i] * input[i * 400 + pixel] }
                    for m in 0..<mid {
                        var inner: Float = 0
                        for i in 0..<8 { inner += w2[m * 8 + i] * input[i * 400 + pixel] }
                        last += w3[o * mid + m] * inner
                    }
                    XCTAssertEqual(got[o * 400 + pixel], first + last, accuracy: 1e-3 * max(1, abs(first + last)),
                                   "mid \(mid), channel \(o), pixel \(pixel)")
                }
            }
        }
    }
}
