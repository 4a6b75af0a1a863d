@testable import GlimpseEngine
import GlimpseTensor
import Foundation
import XCTest

/// `FuseChannelScale`: a squeeze-and-excitation Mul moves into the following 1×1 convolution, which
/// scales its input channels as it packs them (or, where it cannot, scales a copy first), with
/// results equal to the unfused graph's.
final class ChannelScaleFusionTests: XCTestCase {
    private var seed = 0

    private func values(_ n: Int) -> [Float] {
        seed += 1
        return (0..<n).map { Float(sin(Double($0 * 7 + seed * 131))) }
    }

    /// x[N,C,H,W] → GlobalAveragePool → conv 1×1 (C→4) → Relu → conv 1×1 (4→C) → Sigmoid → s;
    /// y = conv(Mul(x, s)) with `cout` outputs, the given stride and a residual r (a graph input)
    /// when `residual` is set. With `scaleFromInput`, s is a graph input instead.
    private func seGraph(channels c: Int, cout: Int, stride: Int = 1, residual: Bool = false,
                         scaleFromInput: Bool = false) throws -> Graph {
        let graph = Graph(name: "se")
        func conv(_ cin: Int, _ cout: Int, stride: Int = 1) -> (ConvOp, Int, Int) {
            let op = ConvOp(window: WindowAttributes(strides: [stride, stride]), group: 1)
            let w = Tensor(shape: [cout, cin, 1, 1], floats: values(cout * cin))
            let b = Tensor(shape: [cout], floats: values(cout))
            return (op, graph.addValue(name: "w\(graph.values.count)", constant: w),
                    graph.addValue(name: "b\(graph.values.count)", constant: b))
        }
        let x = graph.addValue(name: "x"), r = graph.addValue(name: "r")
        let pooled = graph.addValue(name: "pooled"), squeezed = graph.addValue(name: "squeezed")
        let relu = graph.addValue(name: "relu"), excited = graph.addValue(name: "excited")
        let s = graph.addValue(name: "s"), scaled = graph.addValue(name: "scaled"), y = graph.addValue(name: "y")
        let (c1, w1, b1) = conv(c, 4), (c2, w2, b2) = conv(4, c), (c3, w3, b3) = conv(c, cout, stride: stride)
        graph.inputs = [(x, TensorSpec(name: "x", shape: [-1, c, 7, 7], dtype: .float32))]
        if residual {
            let side = (7 - 1) / stride + 1
            graph.inputs.append((r, TensorSpec(name: "r", shape: [-1, cout, side, side], dtype: .float32)))
        }
        let scale: Int
        if scaleFromInput {
            graph.inputs.append((s, TensorSpec(name: "s", shape: [-1, c, 1, 1], dtype: .float32)))
            scale = s
        } else {
            scale = s
            graph.nodes = [
                Graph.Node(op: GlobalPoolOp(opType: "GlobalAveragePool", isMax: false), inputs: [x], outputs: [pooled], name: "gap"),
                Graph.Node(op: c1, inputs: [pooled, w1, b1], outputs: [squeezed], name: "squeeze"),
                Graph.Node(op: UnaryOp(opType: "Relu", kind: .relu), inputs: [squeezed], outputs: [relu], name: "relu"),
                Graph.Node(op: c2, inputs: [relu, w2, b2], outputs: [excited], name: "excite"),
                Graph.Node(op: UnaryOp(opType: "Sigmoid", kind: .sigmoid), inputs: [excited], outputs: [s], name: "sigmoid"),
            ]
        }
        graph.nodes += [
            Graph.Node(op: BinaryOp(kind: .mul), inputs: [x, scale], outputs: [scaled], name: "scale"),
            Graph.Node(op: c3, inputs: [scaled, w3, b3] + (residual ? [r] : []), outputs: [y], name: "project"),
        ]
        graph.outputs = [(y, .float32)]
        for node in graph.nodes { try node.op.prepare(constants: node.inputs.map { graph.constant($0) }) }
        return graph
    }

    private func run(_ graph: Graph, batch: Int, inputs: [[Float]], threads: Int = 2) throws -> [Float] {
        let plan = try ExecutionPlan(graph: graph, batch: batch, threads: threads)
        for (t, v) in zip(plan.inputTensors, inputs) {
            XCTAssertEqual(t.count, v.count)
            t.f32.update(from: v, count: v.count)
        }
        plan.execute(ThreadPool(threads: threads))
        return plan.outputTensors[0].floats()
    }

    private func fusedScale(_ graph: Graph) -> Bool {
        !graph.nodes.contains { ($0.op as? BinaryOp)?.kind == .mul }
            && graph.nodes.contains { $0.op is ConvOp && $0.inputs.count == 5 && $0.inputs[4] != Graph.noValue }
    }

    /// Every path of the fused convolution against the unfused graph: one 7×7 image (a column
    /// tail), three images folded into one GEMM (panels that straddle two images), a residual.
    func testFusedScaleMatchesUnfusedGraph() throws {
        for (batch, residual) in [(1, false), (3, false), (2, true)] {
            for channels in [5, 40] {
                let graph = try seGraph(channels: channels, cout: 33, residual: residual)
                var inputs = [values(batch * channels * 49)]
                if residual { inputs.append(values(batch * 33 * 49)) }
                let expected = try run(graph, batch: batch, inputs: inputs)
                FuseChannelScale.run(graph)
                XCTAssertTrue(fusedScale(graph), "batch \(batch), \(channels) channels")
                let fused = try run(graph, batch: batch, inputs: inputs)
                XCTAssertEqual(fused.count, expected.count)
                let scale = expected.map(abs).max() ?? 1
                let diff = zip(fused, expected).map { abs($0 - $1) }.max() ?? 0
                XCTAssertLessThanOrEqual(diff, 1e-6 * scale, "batch \(batch), residual \(residual), \(channels) channels")
            }
        }
    }

    /// A convolution the packing path does not take (stride 2) gets its scale from a scaled copy
    /// of the input; the node is built fused by hand, since the pass itself only fuses stride 1.
    func testPrescaledFallbackMatchesUnfusedGraph() throws {
        // One channel of one image: fewer channels to scale than threads.
        for (channels, batch) in [(24, 2), (1, 1)] {
            let graph = try seGraph(channels: channels, cout: 16, stride: 2)
            FuseChannelScale.run(graph)
            XCTAssertFalse(fusedScale(graph), "the pass leaves strided convolutions alone")
            let inputs = [values(batch * channels * 49)]
            let expected = try run(graph, batch: batch, inputs: inputs)
            // Fuse by hand: the conv reads x and s, the Mul goes.
            guard let mul = graph.nodes.firstIndex(where: { ($0.op as? BinaryOp)?.kind == .mul }) else {
                return XCTFail("no Mul in the graph")
            }
            let (x, s) = (graph.nodes[mul].inputs[0], graph.nodes[mul].inputs[1])
            graph.nodes.remove(at: mul)
            let conv = mul
            graph.nodes[conv].inputs = [x, graph.nodes[conv].inputs[1], graph.nodes[conv].inputs[2], Graph.noValue, s]
            let fused = try run(graph, batch: batch, inputs: inputs)
            XCTAssertEqual(fused.count, expected.count)
            let scale = expected.map(abs).max() ?? 1
            XCTAssertLessThanOrEqual(zip(fused, expected).map { abs($0 - $1) }.max() ?? 0, 1e-6 * scale,
                                     "\(channels) channels, batch \(batch)")
        }
    }

    /// A scale that is not provably per channel (here a graph input) is not fused.
    func testScaleOfUnknownShapeIsNotFused() throws {
        let graph = try seGraph(channels: 8, cout: 8, scaleFromInput: true)
        FuseChannelScale.run(graph)
        XCTAssertFalse(fusedScale(graph))
        XCTAssertEqual(graph.nodes.count, 2)
    }
}
