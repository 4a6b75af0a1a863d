import GlimpseEngine
import GlimpseTensor
import XCTest

/// Cast, and the Cast → Gather look-up that k-means quantized models fold at load.
final class CastOpTests: XCTestCase {
    /// Folds `op` applied to constant `inputs` and returns its first output.
    func fold(_ op: any Operator, _ inputs: [Tensor]) throws -> Tensor {
        let graph = Graph(name: "cast")
        let ins = inputs.enumerated().map { graph.addValue(name: "in\($0.offset)", constant: $0.element) }
        let out = graph.addValue(name: "out")
        graph.nodes.append(Graph.Node(op: op, inputs: ins, outputs: [out], name: "node"))
        try ConstantFolding.run(graph)
        XCTAssertTrue(graph.nodes.isEmpty, "folded at load")
        return try XCTUnwrap(graph.constant(out))
    }

    func bytes(_ values: [UInt8], _ dtype: DType) -> Tensor {
        let t = Tensor(shape: Shape([values.count]), dtype: dtype)
        for (i, v) in values.enumerated() { t.rawPointer.storeBytes(of: v, toByteOffset: i, as: UInt8.self) }
        return t
    }

    func testIntegerCasts() throws {
        let u = try fold(CastOp(to: .int32), [bytes([0, 7, 255], .uint8)])
        XCTAssertEqual(u.dtype, .int32)
        XCTAssertEqual(u.int64Values(), [0, 7, 255])
        let s = try fold(CastOp(to: .int64), [bytes([0, 0x81, 0x7F], .int8)])
        XCTAssertEqual(s.int64Values(), [0, -127, 127])
        let f = try fold(CastOp(to: .int32), [Tensor(shape: [3], floats: [-2.7, 0.4, 3.9])])
        XCTAssertEqual(f.int64Values(), [-2, 0, 3], "float → int truncates toward zero")
    }

    func testFloatCasts() throws {
        let x = Tensor(shape: [2], floats: [1.0 / 3.0, 70000])
        XCTAssertEqual(try fold(CastOp(to: .float32), [x]).floats(), x.floats())
        let h = try fold(CastOp(to: .float32, roundsToHalf: true), [x]).floats()
        XCTAssertEqual(h[0], Float(Float16(Float(1.0 / 3.0))))
        XCTAssertEqual(h[1], .infinity, "past float16's range")
        XCTAssertEqual(try fold(CastOp(to: .float32), [bytes([3, 250], .uint8)]).floats(), [3, 250])
    }

    /// Gather(table, Cast(uint8 indices → int32)) folds into the looked-up weights, shaped like the indices.
    func testLookupTableFolds() throws {
        let graph = Graph(name: "lut")
        let table = graph.addValue(name: "table", constant: Tensor(shape: [4], floats: [-1, -0.5, 0.25, 2]))
        let idx = Tensor(shape: [2, 3], dtype: .uint8)
        for (i, v) in [3, 0, 1, 2, 2, 3].enumerated() { idx.pointer(as: UInt8.self)[i] = UInt8(v) }
        let indices = graph.addValue(name: "indices", constant: idx)
        let wide = graph.addValue(name: "indices_int32")
        let weights = graph.addValue(name: "weights")
        graph.nodes.append(Graph.Node(op: CastOp(to: .int32), inputs: [indices], outputs: [wide], name: "cast"))
        graph.nodes.append(Graph.Node(op: GatherOp(axis: 0), inputs: [table, wide], outputs: [weights], name: "lookup"))
        try ConstantFolding.run(graph)
        let w = try XCTUnwrap(graph.constant(weights))
        XCTAssertEqual(w.shape.dims, [2, 3])
        XCTAssertEqual(w.floats(), [2, -1, -0.5, 0.25, 0.25, 2])
    }
}
