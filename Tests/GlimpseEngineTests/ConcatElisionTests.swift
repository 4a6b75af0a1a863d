@testable import GlimpseEngine
import GlimpseTensor
import Foundation
import GlimpseTestSupport
import XCTest

/// `ExecutionPlan.elideConcats`: at batch 1 a channel concatenation's inputs are written straight
/// into their slices of its output, with results equal to the copying plan's.
final class ConcatElisionTests: XCTestCase {
    /// x[N,2,6,6] → conv a (1×1, 2→3) and conv b (3×3, pad 1, 2→4) → Concat(a, b) on channels →
    /// conv y (1×1, 7→2). With `alsoRead`, a is a second graph output as well.
    private func fireGraph(alsoRead: Bool) throws -> Graph {
        var seed = 0
        func values(_ n: Int) -> [Float] {
            seed += 1
            return (0..<n).map { Float(sin(Double($0 * 7 + seed * 131))) }
        }
        let graph = Graph(name: "fire")
        func conv(_ cin: Int, _ cout: Int, _ k: Int, pad: Int) throws -> (ConvOp, Int, Int) {
            let op = ConvOp(window: WindowAttributes(pads: [pad, pad, pad, pad]), group: 1)
            let w = Tensor(shape: [cout, cin, k, k], floats: values(cout * cin * k * k))
            let b = Tensor(shape: [cout], floats: values(cout))
            try op.prepare(constants: [nil, w, b])
            return (op, graph.addValue(name: "w\(graph.values.count)", constant: w),
                    graph.addValue(name: "b\(graph.values.count)", constant: b))
        }
        let x = graph.addValue(name: "x")
        let a = graph.addValue(name: "a"), b = graph.addValue(name: "b")
        let c = graph.addValue(name: "c"), y = graph.addValue(name: "y")
        let (ca, wa, ba) = try conv(2, 3, 1, pad: 0)
        let (cb, wb, bb) = try conv(2, 4, 3, pad: 1)
        let (cy, wy, by) = try conv(7, 2, 1, pad: 0)
        graph.inputs = [(x, TensorSpec(name: "x", shape: [-1, 2, 6, 6], dtype: .float32))]
        graph.nodes = [
            Graph.Node(op: ca, inputs: [x, wa, ba], outputs: [a], name: "a"),
            Graph.Node(op: cb, inputs: [x, wb, bb], outputs: [b], name: "b"),
            Graph.Node(op: ConcatOp(axis: 1), inputs: [a, b], outputs: [c], name: "concat"),
            Graph.Node(op: cy, inputs: [c, wy, by], outputs: [y], name: "y"),
        ]
        graph.outputs = [(y, .float32)] + (alsoRead ? [(a, .float32)] : [])
        return graph
    }

    private func run(_ plan: ExecutionPlan, _ input: [Float], pool: ThreadPool) -> [[Float]] {
        plan.inputTensors[0].f32.update(from: input, count: input.count)
        plan.execute(pool)
        return plan.outputTensors.map { $0.floats() }
    }

    /// Batch-1 plans elide the concatenation (and only when no one else reads its inputs); each
    /// item's outputs equal those of a batch-2 plan, which copies, up to rounding: the batch-2
    /// plan's GEMMs tile the columns differently, and a column tail sums its products in another order.
    func testBatchOneConcatIsWrittenInPlace() throws {
        let pool = ThreadPool(threads: 2)
        let input = (0..<144).map { Float(cos(Double($0) * 0.37)) }
        for alsoRead in [false, true] {
            let graph = try fireGraph(alsoRead: alsoRead)
            let one = try ExecutionPlan(graph: graph, batch: 1, threads: 2)
            let two = try ExecutionPlan(graph: graph, batch: 2, threads: 2)
            XCTAssertEqual(one.elidedConcats, alsoRead ? 0 : 1, "alsoRead \(alsoRead)")
            XCTAssertEqual(two.elidedConcats, 0, "batch 2: an input's slices are not contiguous")
            let both = run(two, input, pool: pool)
            for item in 0..<2 {
                let single = run(one, Array(input[(item * 72)..<(item * 72 + 72)]), pool: pool)
                let y = both[0].count / 2
                XCTAssertEqual(single[0].count, y)
                XCTAssertLessThanOrEqual(relativeError(single[0], Array(both[0][(item * y)..<(item * y + y)])), 1e-5,
                                         "item \(item), alsoRead \(alsoRead)")
                if alsoRead {
                    let a = both[1].count / 2
                    XCTAssertEqual(single[1].count, a)
                    XCTAssertLessThanOrEqual(relativeError(single[1], Array(both[1][(item * a)..<(item * a + a)])), 1e-5,
                                             "item \(item)")
                }
            }
        }
    }
}
