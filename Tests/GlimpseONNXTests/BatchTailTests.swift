@testable import GlimpseEngine
import GlimpseONNX
import GlimpseTensor
import GlimpseTestSupport
import XCTest

/// `BatchTail`: a batch split into items joins again, on one thread where the planes become small,
/// on several for the graph's last large fully connected layer; the rest runs once for the whole batch.
final class BatchTailTests: XCTestCase {
    /// MobileNetV2 (7×7 planes at the end, a 1280 × 1000 classifier) on two threads, batches of 3 (two
    /// items side by side, the third on both threads) and 2, and on the calling thread alone (joining
    /// at the 7×7 planes): every item equals its batch-1 run.
    func testSplitBatchJoinsForTheClassifierOrWhereThePlanesAreSmall() throws {
        let m = try ONNXLoader.load(path: try SharedData.path("models/arch/mobilenet_v2.onnx"),
                                    options: EngineOptions(threads: 2, batchSplitting: .always))
        let classifier = try XCTUnwrap(m.parallelBatchTail, "MobileNetV2 ends in a 1280 × 1000 Gemm")
        XCTAssertTrue(m.graph.nodes[classifier.node].op is GemmOp)
        XCTAssertEqual(m.graph.nodes[classifier.node].inputs[0], classifier.value)
        let tail = try XCTUnwrap(m.batchTail)
        XCTAssertTrue(m.graph.nodes[tail.node].inputs.contains(tail.value))
        let plan = try ExecutionPlan(graph: m.graph, batch: 1, threads: 1)
        func pixels(_ v: Int) -> Int? { plan.types[v].flatMap { $0.shape.count == 4 ? $0.shape[2] * $0.shape[3] : nil } }
        XCTAssertEqual(m.graph.nodes[tail.node...].flatMap(\.outputs).compactMap(pixels).max(), 7 * 7)
        XCTAssertEqual(m.graph.nodes[..<tail.node].flatMap(\.outputs).compactMap(pixels).min(), 14 * 14)
        XCTAssertEqual(pixels(tail.value), 14 * 14, "the earliest cut: the stride-2 convolution from 14×14 to 7×7")
        let (input, singles) = try imageBatchAndSingleRuns(m, items: 3)
        XCTAssertGreaterThan(relativeError(singles[0], singles[1]), 1e-3, "distinct items")
        for (batch, parallel) in [(3, true), (2, true), (3, false)] {
            XCTAssertEqual(m.splitsBatches(of: batch, threads: parallel ? 2 : 1), true)
            for run in 0..<2 {
                try assertBatchRunMatchesSingleRuns(m, input, batch: batch, parallel: parallel, singles: singles,
                                                    "batch \(batch), parallel \(parallel), run \(run)")
            }
        }
    }

    /// x[N,64] → Relu → Gemm (64 × 4096) → y, optionally plus a second Gemm of x added to y. The
    /// first has a tail; in the second the tail also reads a value from before it, and has none.
    func testTailNeedsTheLayerInputAlone() throws {
        func graph(addSecond: Bool) throws -> Graph {
            let graph = Graph(name: "fc")
            func gemm() throws -> (GemmOp, Int) {
                let op = GemmOp(opType: "Gemm")
                let w = Tensor(shape: [64, 4096], floats: (0..<(64 * 4096)).map { Float(sin(Double($0) * 0.01)) * 0.1 })
                try op.prepare(constants: [nil, w])
                return (op, graph.addValue(name: "w\(graph.values.count)", constant: w))
            }
            let x = graph.addValue(name: "x"), r = graph.addValue(name: "r"), y = graph.addValue(name: "y")
            graph.inputs = [(x, TensorSpec(name: "x", shape: [-1, 64], dtype: .float32))]
            let (g1, w1) = try gemm()
            graph.nodes = [
                Graph.Node(op: UnaryOp(opType: "Relu", kind: .relu), inputs: [x], outputs: [r], name: "relu"),
            ]
            if addSecond {
                let s = graph.addValue(name: "s"), f = graph.addValue(name: "f")
                let (g0, w0) = try gemm()
                graph.nodes.insert(Graph.Node(op: g0, inputs: [x, w0], outputs: [s], name: "fc0"), at: 0)
                graph.nodes.append(Graph.Node(op: g1, inputs: [r, w1], outputs: [f], name: "fc1"))
                graph.nodes.append(Graph.Node(op: BinaryOp(kind: .add), inputs: [f, s], outputs: [y], name: "add"))
            } else {
                graph.nodes.append(Graph.Node(op: g1, inputs: [r, w1], outputs: [y], name: "fc1"))
            }
            graph.outputs = [(y, .float32)]
            return graph
        }
        for addSecond in [false, true] {
            let m = try CompiledModel(graph: try graph(addSecond: addSecond),
                                      options: EngineOptions(threads: 2, batchSplitting: .always))
            XCTAssertTrue(m.itemsIndependent)
            if addSecond {
                XCTAssertNil(m.batchTail, "the tail reads fc0's output too")
            } else {
                XCTAssertEqual(m.batchTail?.node, 1)
            }
            let x = Tensor(shape: [3, 64], floats: (0..<192).map { Float(cos(Double($0) * 0.3)) })
            let all = try m.run([x])[0].floats()
            for item in 0..<3 {
                let one = Tensor(shape: [1, 64], floats: Array(x.floats()[(item * 64)..<(item * 64 + 64)]))
                let single = try m.run([one])[0].floats()
                XCTAssertLessThanOrEqual(relativeError(Array(all[(item * 4096)..<(item * 4096 + 4096)]), single), 1e-5,
                                         "addSecond \(addSecond), item \(item)")
            }
        }
    }
}
