@testable import GlimpseEngine
import GlimpseKernels
import GlimpseTensor
import XCTest

/// Weights are held once: convolutions that read the same weights share one packed copy (models that
/// run the same weights on two inputs, like cifar10-large's image and mirror image), and the imported
/// constants the operators have packed are dropped (`ReleaseConstants`), while the results stay those
/// of the scalar reference.
final class ReleaseConstantsTests: XCTestCase {
    private func values(_ n: Int, _ seed: Int) -> [Float] {
        (0..<n).map { Float(sin(Double($0 * 7 + seed * 31))) * 0.1 }
    }

    func testSameWeightsArePackedOnceAndTheImportedCopiesDropped() throws {
        let (cin, cout, side) = (f32_winograd_2x2_3x3.minChannels, 16, 8)
        let window = WindowAttributes(strides: [1, 1], pads: [1, 1, 1, 1])
        let weights = values(cout * cin * 9, 1), bias = values(cout, 2)
        var other = weights
        other[other.count / 2] += 0.5  // one weight differs: not the same copy
        let ledger = MemoryLedger()
        let graph = Graph(name: "twins")
        let (conv1, conv2, conv3) = (ConvOp(window: window, group: 1), ConvOp(window: window, group: 1), ConvOp(window: window, group: 1))
        let x = graph.addValue(name: "x")
        let (y1, y2, r2, y3) = (graph.addValue(name: "y1"), graph.addValue(name: "y2"), graph.addValue(name: "r2"), graph.addValue(name: "y3"))
        let (w, w3, b) = ledger.charging {
            (graph.addValue(name: "w", constant: Tensor(shape: [cout, cin, 3, 3], floats: weights)),
             graph.addValue(name: "w3", constant: Tensor(shape: [cout, cin, 3, 3], floats: other)),
             graph.addValue(name: "b", constant: Tensor(shape: [cout], floats: bias)))
        }
        graph.inputs = [(x, TensorSpec(name: "x", shape: [-1, cin, side, side], dtype: .float32))]
        graph.nodes = [Graph.Node(op: conv1, inputs: [x, w, b], outputs: [y1], name: "conv1"),
                       Graph.Node(op: conv2, inputs: [x, w, b], outputs: [y2], name: "conv2"),
                       Graph.Node(op: UnaryOp(opType: "Relu", kind: .relu), inputs: [y2], outputs: [r2], name: "relu"),
                       Graph.Node(op: conv3, inputs: [x, w3, b], outputs: [y3], name: "conv3")]
        graph.outputs = [(y1, .float32), (r2, .float32), (y3, .float32)]
        try ledger.charging { try GraphOptimizer.optimize(graph) }

        XCTAssertNotNil(conv1.packed)
        XCTAssertTrue(conv1.packed === conv2.packed, "the same weights were packed twice")
        XCTAssertFalse(conv1.packed === conv3.packed, "different weights share a packed copy")
        XCTAssertTrue(conv2.activation.lower == 0, "the shared weights keep each convolution's own activation")
        for v in [w, w3, b] {
            XCTAssertNil(graph.constant(v), "\(graph.values[v].name): the imported copy is still held")
        }
        XCTAssertEqual(graph.constantType(w), ValueType([cout, cin, 3, 3]))
        // Two packed copies (w, w3) of about the weights' size and the biases, not three copies, and
        // no imported ones (five copies in all before).
        let weightBytes = weights.count * 4
        XCTAssertLessThan(ledger.bytes, 2 * weightBytes + weightBytes / 2, "weights held: \(ledger.bytes) bytes")

        let batch = 2
        let plan = try ExecutionPlan(graph: graph, batch: batch, threads: 2)
        let input = values(batch * cin * side * side, 3)
        plan.inputTensors[0].f32.update(from: input, count: input.count)
        plan.execute(ThreadPool(threads: 2))
        let g = try window.geometry(channels: cin, h: side, w: side, kernel: [3, 3])
        let plain = referenceConvolution(input, weights: weights, bias: bias, geometry: g, outChannels: cout, batch: batch)
        let rectified = referenceConvolution(input, weights: weights, bias: bias, geometry: g, outChannels: cout, batch: batch, lower: 0)
        let changed = referenceConvolution(input, weights: other, bias: bias, geometry: g, outChannels: cout, batch: batch)
        for (i, expected) in [plain, rectified, changed].enumerated() {
            let got = plan.outputTensors[i].floats()
            XCTAssertEqual(got.count, expected.count)
            let worst = zip(got, expected).map { abs($0 - $1) }.max() ?? .infinity
            XCTAssertLessThan(worst, 1e-4, "output \(i): max |Δ| \(worst)")
        }
    }

    func testConstantsNoNodeReadsAreDropped() throws {
        let graph = Graph(name: "unread")
        let x = graph.addValue(name: "x"), y = graph.addValue(name: "y")
        let unread = graph.addValue(name: "unread", constant: Tensor(shape: [4], floats: [1, 2, 3, 4]))
        let scale = graph.addValue(name: "scale", constant: Tensor(shape: [1], floats: [2]))
        graph.inputs = [(x, TensorSpec(name: "x", shape: [-1, 4], dtype: .float32))]
        graph.nodes = [Graph.Node(op: BinaryOp(kind: .mul), inputs: [x, scale], outputs: [y], name: "mul")]
        graph.outputs = [(y, .float32)]
        try GraphOptimizer.optimize(graph)
        XCTAssertNil(graph.constant(unread))
        XCTAssertNil(graph.constantType(unread), "a constant nobody reads keeps no type either")
        XCTAssertNotNil(graph.constant(scale), "Mul reads its constant operand when it runs")
        let plan = try ExecutionPlan(graph: graph, batch: 1, threads: 1)
        plan.inputTensors[0].f32.update(from: [1, 2, 3, 4], count: 4)
        plan.execute(ThreadPool(threads: 1))
        XCTAssertEqual(plan.outputTensors[0].floats(), [2, 4, 6, 8])
    }
}
