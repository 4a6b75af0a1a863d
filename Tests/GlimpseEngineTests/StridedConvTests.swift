@testable import GlimpseEngine
import GlimpseKernels
import GlimpseTensor
import GlimpseTestSupport
import XCTest

/// Convolutions that read phase planes (`PhasePlaneSource`): stride 2 with and without padding, a 7×7 stem,
/// a residual, and a stride-1 convolution without padding, over the output's
/// pixels and over the flat output, run through the engine on one and two threads and two images,
/// against the scalar reference. Also those with a 7×7 output, which `Gemm49Driver` multiplies
/// instead: from an im2col matrix (strided) or from the input in place (1×1, stride 1).
final class StridedConvTests: XCTestCase {
    private struct Case {
        let cin, cout, h, w, kernel, stride, pad: Int
        var residual = false
        /// Whether the convolution reads phase planes; the others have 7×7 outputs.
        var phases = true
    }

    private func values(_ n: Int, _ seed: Int) -> [Float] {
        (0..<n).map { Float(sin(Double($0 * 13 + seed * 101))) }
    }

    private func check(_ c: Case, batch: Int, threads: Int) throws {
        let window = WindowAttributes(strides: [c.stride, c.stride], pads: [c.pad, c.pad, c.pad, c.pad])
        let g = try window.geometry(channels: c.cin, h: c.h, w: c.w, kernel: [c.kernel, c.kernel])
        XCTAssertEqual(ConvKernel.readsPhases(g, depthwise: false, group: 1, residual: c.residual), c.phases, "\(c) takes another path")
        if !c.phases { XCTAssertEqual(g.outPixels, Gemm49Driver.columns, "\(c)") }
        let graph = Graph(name: "strided")
        let op = ConvOp(window: window, group: 1)
        op.activation = Activation(lower: 0)
        let weights = values(c.cout * g.patchSize, 1), bias = values(c.cout, 2)
        let x = graph.addValue(name: "x"), r = graph.addValue(name: "r"), y = graph.addValue(name: "y")
        let w = graph.addValue(name: "w", constant: Tensor(shape: [c.cout, c.cin, c.kernel, c.kernel], floats: weights))
        let b = graph.addValue(name: "b", constant: Tensor(shape: [c.cout], floats: bias))
        graph.inputs = [(x, TensorSpec(name: "x", shape: [-1, c.cin, c.h, c.w], dtype: .float32))]
        if c.residual {
            graph.inputs.append((r, TensorSpec(name: "r", shape: [-1, c.cout, g.outHeight, g.outWidth], dtype: .float32)))
        }
        graph.nodes = [Graph.Node(op: op, inputs: [x, w, b] + (c.residual ? [r] : []), outputs: [y], name: "conv")]
        graph.outputs = [(y, .float32)]
        try op.prepare(constants: graph.nodes[0].inputs.map { graph.constant($0) })

        let image = c.cin * g.inPixels, outImage = c.cout * g.outPixels
        let input = values(batch * image, 3), residual = values(batch * outImage, 4)
        let plan = try ExecutionPlan(graph: graph, batch: batch, threads: threads)
        plan.inputTensors[0].f32.update(from: input, count: input.count)
        if c.residual { plan.inputTensors[1].f32.update(from: residual, count: residual.count) }
        plan.execute(ThreadPool(threads: threads))
        let got = plan.outputTensors[0].floats()

        var expected = referenceConvolution(input, weights: weights, bias: bias, geometry: g, outChannels: c.cout, batch: batch)
        for i in 0..<expected.count { expected[i] = max(0, expected[i] + (c.residual ? residual[i] : 0)) }
        guard got.count == expected.count else { return XCTFail("\(c): \(got.count) outputs, expected \(expected.count)") }
        XCTAssertLessThan(relativeError(got, expected), 1e-5, "\(c), batch \(batch), \(threads) threads")
    }

    func testStridedConvolutionsMatchReference() throws {
        let cases = [
            // 28×28 → 14×14, 15 flat columns per row: 7 panels; 200 outputs split rows across threads.
            Case(cin: 20, cout: 200, h: 28, w: 28, kernel: 3, stride: 2, pad: 1),
            // No padding, an odd plane (squeezenet's first layer, smaller): 39 output columns, the
            // GEMM's columns are the output's pixels and some panels cross a row end.
            Case(cin: 3, cout: 64, h: 80, w: 80, kernel: 3, stride: 2, pad: 0),
            // A 7×7 stem; K = 147 in one block.
            Case(cin: 3, cout: 16, h: 80, w: 80, kernel: 7, stride: 2, pad: 3),
            // K over several blocks (40·9 = 360), stride 1 without padding (output narrower).
            Case(cin: 40, cout: 13, h: 30, w: 30, kernel: 3, stride: 1, pad: 0),
            // A residual, read in the output's layout.
            Case(cin: 8, cout: 24, h: 80, w: 80, kernel: 3, stride: 2, pad: 1, residual: true),
            // 14×14 → 7×7 (ResNet-50's last stage, smaller): the im2col matrix and 49-column tiles;
            // K over two blocks, 50 outputs (a row tail).
            Case(cin: 40, cout: 50, h: 14, w: 14, kernel: 3, stride: 2, pad: 1, phases: false),
            Case(cin: 300, cout: 20, h: 14, w: 14, kernel: 1, stride: 2, pad: 0, residual: true, phases: false),
            // A 1×1 convolution of a 7×7 plane, its input read in place.
            Case(cin: 270, cout: 40, h: 7, w: 7, kernel: 1, stride: 1, pad: 0, residual: true, phases: false),
        ]
        for c in cases {
            try check(c, batch: 1, threads: 1)
            try check(c, batch: 2, threads: 2)
        }
    }
}
