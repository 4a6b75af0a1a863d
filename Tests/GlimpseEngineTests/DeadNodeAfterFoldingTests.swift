@testable import GlimpseEngine
import GlimpseKernels
import GlimpseTensor
import XCTest

/// `ExecutionPlan.neededNodes`: a node whose only reader is folded at planning time (a Shape, whose
/// value the batch size fixes) gets no kernel, and the plan's outputs are unchanged.
final class DeadNodeAfterFoldingTests: XCTestCase {
    func testNodeReadOnlyByAShapeIsNotRun() throws {
        // x[N,4] → a = Relu(x) → s = Shape(a); y = Relu(Reshape(x, s)). Only y's Relu needs to run.
        let graph = Graph(name: "shape-only")
        let x = graph.addValue(name: "x"), a = graph.addValue(name: "a"), s = graph.addValue(name: "s")
        let r = graph.addValue(name: "r"), y = graph.addValue(name: "y")
        graph.inputs = [(x, TensorSpec(name: "x", shape: [-1, 4], dtype: .float32))]
        graph.nodes = [
            Graph.Node(op: UnaryOp(opType: "Relu", kind: .relu), inputs: [x], outputs: [a], name: "a"),
            Graph.Node(op: ShapeOp(), inputs: [a], outputs: [s], name: "s"),
            Graph.Node(op: ViewOp(opType: "Reshape", kind: .reshape(shape: nil)), inputs: [x, s], outputs: [r], name: "r"),
            Graph.Node(op: UnaryOp(opType: "Relu", kind: .relu), inputs: [r], outputs: [y], name: "y"),
        ]
        graph.outputs = [(y, .float32)]
        for batch in [1, 3] {
            let plan = try ExecutionPlan(graph: graph, batch: batch, threads: 1)
            XCTAssertEqual(plan.kernels(from: 0).count, 1, "batch \(batch): only the Relu that feeds the output runs")
            XCTAssertNil(plan.tensor(of: a), "batch \(batch): the Shape-only value has no buffer")
            let input = (0..<4 * batch).map { Float($0) - 5 }
            plan.inputTensors[0].f32.update(from: input, count: input.count)
            plan.execute(ThreadPool.serial)
            XCTAssertEqual(plan.outputTensors[0].floats(), input.map { max($0, 0) })
            XCTAssertEqual(plan.outputTensors[0].shape.dims, [batch, 4])
        }
    }
}
