@testable import GlimpseEngine
import GlimpseKernels
import GlimpseTensor
import GlimpseTestSupport
import XCTest

/// 3×3 convolutions run by Winograd F(2×2, 3×3) (`WinogradConvKernel`): square and oblong planes,
/// rows narrower than one vector of tiles, output channels off the GEMM's 6-row tiles, a plane
/// split into bands of tile rows, ReLU and ReLU6, one and two threads, one and two images, against
/// the scalar reference. (The shared `structure/light_*` graphs cannot check it: their outputs are
/// uniform.)
final class WinogradConvTests: XCTestCase {
    private struct Case {
        let cin, cout, h, w: Int
        var activation = Activation(lower: 0)
    }

    private func values(_ n: Int, _ seed: Int) -> [Float] {
        (0..<n).map { Float(sin(Double($0 * 13 + seed * 101))) }
    }

    private func check(_ c: Case, batch: Int, threads: Int) throws {
        let window = WindowAttributes(strides: [1, 1], pads: [1, 1, 1, 1])
        let g = try window.geometry(channels: c.cin, h: c.h, w: c.w, kernel: [3, 3])
        let graph = Graph(name: "winograd")
        let op = ConvOp(window: window, group: 1)
        op.activation = c.activation
        let weights = values(c.cout * g.patchSize, 1), bias = values(c.cout, 2)
        let x = graph.addValue(name: "x"), y = graph.addValue(name: "y")
        let w = graph.addValue(name: "w", constant: Tensor(shape: [c.cout, c.cin, 3, 3], floats: weights))
        let b = graph.addValue(name: "b", constant: Tensor(shape: [c.cout], floats: bias))
        graph.inputs = [(x, TensorSpec(name: "x", shape: [-1, c.cin, c.h, c.w], dtype: .float32))]
        graph.nodes = [Graph.Node(op: op, inputs: [x, w, b], outputs: [y], name: "conv")]
        graph.outputs = [(y, .float32)]
        try op.prepare(constants: graph.nodes[0].inputs.map { graph.constant($0) })
        XCTAssertTrue(op.runsWinograd(g, [ValueType([batch, c.cin, c.h, c.w]), .absent, .absent]), "\(c)")

        let input = values(batch * c.cin * g.inPixels, 3)
        let plan = try ExecutionPlan(graph: graph, batch: batch, threads: threads)
        plan.inputTensors[0].f32.update(from: input, count: input.count)
        plan.execute(ThreadPool(threads: threads))
        let got = plan.outputTensors[0].floats()

        let expected = referenceConvolution(input, weights: weights, bias: bias, geometry: g, outChannels: c.cout, batch: batch,
                                            lower: c.activation.lower, upper: c.activation.upper)
        guard got.count == expected.count else { return XCTFail("\(c): \(got.count) outputs, expected \(expected.count)") }
        XCTAssertLessThan(relativeError(got, expected), 2e-5, "\(c), batch \(batch), \(threads) threads")
    }

    func testWinogradMatchesReference() throws {
        let cases = [
            // ResNet-50's 14×14 stage, smaller: one band, 7 tiles a row.
            Case(cin: 64, cout: 48, h: 14, w: 14),
            // Oblong, 3 tiles a row (under one vector), 50 outputs (6-row tiles end in 2), ReLU6.
            Case(cin: 70, cout: 50, h: 24, w: 6, activation: Activation(lower: 0, upper: 6)),
            // 20 tiles a row (a vector and a part), no activation.
            Case(cin: 96, cout: 40, h: 12, w: 40, activation: Activation()),
            // V and M over `f32_winograd_2x2_3x3.bandBytes`: two bands of tile rows.
            Case(cin: 64, cout: 64, h: 56, w: 56),
        ]
        for c in cases {
            try check(c, batch: 1, threads: 1)
            try check(c, batch: 1, threads: 2)
            try check(c, batch: 2, threads: 2)
        }
        let big = f32_winograd_2x2_3x3.Tiles(height: 56, width: 56)
        XCTAssertLessThan(big.bandRows(cin: 64, cout: 64), big.rows, "the last case should take more than one band")
    }

    /// With a residual, an odd plane, or fewer input channels, the convolution keeps the GEMM.
    func testOtherShapesKeepTheGemm() throws {
        let window = WindowAttributes(strides: [1, 1], pads: [1, 1, 1, 1])
        let op = ConvOp(window: window, group: 1)
        try op.prepare(constants: [nil, Tensor(shape: [8, 64, 3, 3], floats: values(8 * 64 * 9, 1)), nil])
        let even = try window.geometry(channels: 64, h: 14, w: 14, kernel: [3, 3])
        let odd = try window.geometry(channels: 64, h: 13, w: 13, kernel: [3, 3])
        let x = ValueType([1, 64, 14, 14])
        XCTAssertTrue(op.runsWinograd(even, [x, .absent, .absent]))
        XCTAssertFalse(op.runsWinograd(even, [x, .absent, .absent, ValueType([1, 8, 14, 14])]))
        XCTAssertFalse(op.runsWinograd(odd, [ValueType([1, 64, 13, 13]), .absent, .absent]))
        let narrow = ConvOp(window: window, group: 1)
        try narrow.prepare(constants: [nil, Tensor(shape: [8, 32, 3, 3], floats: values(8 * 32 * 9, 1)), nil])
        XCTAssertFalse(narrow.winogradEligible)
    }
}
