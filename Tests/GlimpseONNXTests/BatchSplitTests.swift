import Foundation
import GlimpseEngine
import GlimpseONNX
import GlimpseTensor
import GlimpseTestSupport
import XCTest

/// `EngineOptions.batchSplitting`: a batch may run as single items side by side, one per thread,
/// only when the graph's items were shown independent at load, and gives the batch's results.
final class BatchSplitTests: XCTestCase {
    /// x[-1,4] → Softmax over axis 0, the batch axis: a dynamic batch whose items are not
    /// independent. The check at load refuses to split, and even `.always` runs the batch whole.
    func testSoftmaxAcrossTheBatchIsNeverSplit() throws {
        let graph = Graph(name: "batch-softmax")
        let x = graph.addValue(name: "x")
        let y = graph.addValue(name: "y")
        graph.inputs = [(x, TensorSpec(name: "x", shape: [-1, 4], dtype: .float32))]
        graph.nodes = [
            Graph.Node(op: SoftmaxOp(opType: "Softmax", axis: 0, coerce2D: false, isLog: false), inputs: [x], outputs: [y], name: "sm"),
        ]
        graph.outputs = [(y, .float32)]
        let m = try CompiledModel(graph: graph, options: EngineOptions(threads: 2, batchSplitting: .always))
        XCTAssertFalse(m.itemsIndependent)
        XCTAssertEqual(m.splitsBatches(of: 2, threads: 2), false)
        let out = try m.run([Tensor(shape: [2, 4], floats: [0, 1, 2, 3, 0, 1, 2, 3])])[0].floats()
        for v in out { XCTAssertEqual(v, 0.5, accuracy: 1e-6, "each column normalised across the two items") }
    }

    /// SqueezeNet 1.1 on two threads, batches of 3 (two items side by side, the third on both
    /// threads) and 2: `.auto` times both ways on its first runs, then keeps one. Every run, split
    /// or whole, gives item by item what batch-1 runs give.
    func testAutoSplitMatchesSingleItemsOnEveryRun() throws {
        let m = try ONNXLoader.load(path: try SharedData.path("models/squeezenet1.1.onnx"),
                                    options: EngineOptions(threads: 2))
        XCTAssertTrue(m.itemsIndependent)
        let (input, singles) = try imageBatchAndSingleRuns(m, items: 3)
        XCTAssertGreaterThan(relativeError(singles[0], singles[1]), 1e-3, "distinct items")

        func check(_ batch: Int, parallel: Bool, threads: Int) throws {
            XCTAssertNil(m.splitsBatches(of: batch, threads: threads), "undecided before the first runs")
            for run in 0..<CompiledModel.batchSplitMaxTrialRuns + 2 {
                try assertBatchRunMatchesSingleRuns(m, input, batch: batch, parallel: parallel, singles: singles, "batch \(batch), run \(run)")
            }
            XCTAssertNotNil(m.splitsBatches(of: batch, threads: threads), "decided after the trial runs")
        }
        try check(3, parallel: true, threads: 2)
        try check(2, parallel: true, threads: 2)
        try check(2, parallel: false, threads: 1)
    }
}
