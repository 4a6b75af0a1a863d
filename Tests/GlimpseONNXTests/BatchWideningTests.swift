import Foundation
import GlimpseEngine
import GlimpseONNX
import GlimpseTensor
import GlimpseTestSupport
import XCTest

/// `EngineOptions.widenFixedBatch`: models that declare a fixed batch of 1 run any batch size when,
/// and only when, that gives the same results as batch-1 runs.
final class BatchWideningTests: XCTestCase {
    static let widen = EngineOptions(threads: 1, widenFixedBatch: true)

    // MARK: mnist-8 (input [1,1,28,28], Reshape to the constant [1,256], MatMul, Add of a [1,10] bias)

    func testMnistIsWidenedOnlyWhenAskedFor() throws {
        let path = try SharedData.path("models/mnist-8.onnx")
        let plain = try ONNXLoader.load(path: path)
        XCTAssertFalse(plain.widenedBatch, "opt-in")
        XCTAssertEqual(plain.inputs.first?.shape, [1, 1, 28, 28])
        XCTAssertThrowsError(try plain.run([Tensor(shape: [2, 1, 28, 28])]))

        let wide = try ONNXLoader.load(path: path, options: Self.widen)
        XCTAssertTrue(wide.widenedBatch)
        XCTAssertEqual(wide.inputs, [TensorSpec(name: "Input3", shape: [-1, 1, 28, 28], dtype: .float32)])
        XCTAssertEqual(wide.outputs.map(\.shape), [[-1, 10]])
        XCTAssertThrowsError(try wide.run([Tensor(shape: [2, 1, 27, 28])]), "item shape still checked")
    }

    /// A batch of 4 distinct MNIST test digits gives, item by item, the logits of batch-1 runs of the
    /// unwidened model, and the right digits.
    func testMnistBatchOfFourMatchesSingleRuns() throws {
        let path = try SharedData.path("models/mnist-8.onnx")
        let plain = try ONNXLoader.load(path: path)
        let wide = try ONNXLoader.load(path: path, options: Self.widen)
        let (images, labels) = try MNIST.testSplit(first: 4)
        XCTAssertEqual(Set(labels).count, 4, "four different digits: \(labels)")

        let batch = Tensor(shape: [4, 1, 28, 28], floats: images.flatMap { $0 })
        let logits = try wide.run([batch])[0]
        XCTAssertEqual(logits.shape.dims, [4, 10])
        let all = logits.floats()
        for (i, image) in images.enumerated() {
            let one = Tensor(shape: [1, 1, 28, 28], floats: image)
            let single = try plain.run([one])[0].floats()
            let item = Array(all[(i * 10)..<(i * 10 + 10)])
            let err = relativeError(item, single)
            XCTAssertLessThanOrEqual(err, 1e-5, "digit \(i): batch \(item) vs single \(single)")
            XCTAssertEqual(argmax(item[...]), labels[i], "digit \(i)")
            XCTAssertEqual(try wide.run([one])[0].floats(), single, "batch 1 of the widened model is unchanged")
        }
    }

    // MARK: Synthetic graphs

    /// x[1,2,3] → Reshape (opset-1 attribute) [1,6] → Softmax(axis 1): batch-independent, widened.
    func testFixedAttributeReshapeIsWidened() throws {
        let graph = Graph(name: "rows")
        let x = graph.addValue(name: "x")
        let flat = graph.addValue(name: "flat")
        let y = graph.addValue(name: "y")
        graph.inputs = [(x, TensorSpec(name: "x", shape: [1, 2, 3], dtype: .float32))]
        graph.nodes = [
            Graph.Node(op: ViewOp(opType: "Reshape", kind: .reshape(shape: [1, 6])), inputs: [x], outputs: [flat], name: "flat"),
            Graph.Node(op: SoftmaxOp(opType: "Softmax", axis: 1, coerce2D: false, isLog: false), inputs: [flat], outputs: [y], name: "sm"),
        ]
        graph.outputs = [(y, .float32)]
        let m = try CompiledModel(graph: graph, options: Self.widen)
        XCTAssertTrue(m.widenedBatch)
        XCTAssertEqual(m.inputs.first?.shape, [-1, 2, 3])
        XCTAssertEqual(m.outputs.first?.shape, [-1, 6])
        XCTAssertEqual(graph.inputs[0].spec.shape, [1, 2, 3], "the caller's graph is not rewritten")

        let values: [Float] = (0..<18).map { Float($0 % 7) - 3 }
        let out = try m.run([Tensor(shape: [3, 2, 3], floats: values)])[0]
        XCTAssertEqual(out.shape.dims, [3, 6])
        for item in 0..<3 {
            let one = try m.run([Tensor(shape: [1, 2, 3], floats: Array(values[(item * 6)..<(item * 6 + 6)]))])[0].floats()
            XCTAssertLessThanOrEqual(relativeError(Array(out.floats()[(item * 6)..<(item * 6 + 6)]), one), 1e-6)
            XCTAssertEqual(one.reduce(0, +), 1, accuracy: 1e-5)
        }
    }

    /// x[1,4] → Reshape [1,-1] → x + Softmax over axis 0, the batch axis: batch 2 plans, but it
    /// would normalize across items, so the check refuses and the model stays at batch 1.
    func testSoftmaxAcrossTheBatchIsNotWidened() throws {
        let graph = Graph(name: "batch-softmax")
        let x = graph.addValue(name: "x")
        let target = graph.addValue(name: "target", constant: .int64([1, -1]))
        let flat = graph.addValue(name: "flat")
        let soft = graph.addValue(name: "soft")
        let y = graph.addValue(name: "y")
        graph.inputs = [(x, TensorSpec(name: "x", shape: [1, 4], dtype: .float32))]
        graph.nodes = [
            Graph.Node(op: ViewOp(opType: "Reshape", kind: .reshape(shape: nil)), inputs: [x, target], outputs: [flat], name: "flat"),
            Graph.Node(op: SoftmaxOp(opType: "Softmax", axis: 0, coerce2D: false, isLog: false), inputs: [flat], outputs: [soft], name: "sm"),
            Graph.Node(op: BinaryOp(kind: .add), inputs: [flat, soft], outputs: [y], name: "add"),
        ]
        graph.outputs = [(y, .float32)]
        try assertStaysFixed(graph, input: [0.5, -1, 2, 3], expected: [1.5, 0, 3, 4])
    }

    /// x[1,4] → Reshape to the constant [2,-1] → Transpose → Reshape [-1,4]: plannable at batch 2 with
    /// batch-major shapes, but item 0 of that batch is built from both items. Not widened.
    func testConstantReshapeThatMixesItemsIsNotWidened() throws {
        let graph = Graph(name: "mix")
        let x = graph.addValue(name: "x")
        let halves = graph.addValue(name: "halves_shape", constant: .int64([2, -1]))
        let rows = graph.addValue(name: "rows_shape", constant: .int64([-1, 4]))
        let a = graph.addValue(name: "a"), b = graph.addValue(name: "b"), y = graph.addValue(name: "y")
        graph.inputs = [(x, TensorSpec(name: "x", shape: [1, 4], dtype: .float32))]
        graph.nodes = [
            Graph.Node(op: ViewOp(opType: "Reshape", kind: .reshape(shape: nil)), inputs: [x, halves], outputs: [a], name: "halves"),
            Graph.Node(op: TransposeOp(perm: [1, 0]), inputs: [a], outputs: [b], name: "t"),
            Graph.Node(op: ViewOp(opType: "Reshape", kind: .reshape(shape: nil)), inputs: [b, rows], outputs: [y], name: "rows"),
        ]
        graph.outputs = [(y, .float32)]
        try assertStaysFixed(graph, input: [10, 20, 30, 40], expected: [10, 30, 20, 40])
    }

    /// Compiles `graph` with widening asked for and checks it kept its fixed batch of 1: specs,
    /// a batch-1 run giving `expected`, and a batch of 2 refused.
    func assertStaysFixed(_ graph: Graph, input: [Float], expected: [Float],
                          file: StaticString = #filePath, line: UInt = #line) throws {
        let m = try CompiledModel(graph: graph, options: Self.widen)
        XCTAssertFalse(m.widenedBatch, file: file, line: line)
        XCTAssertEqual(m.inputs.first?.shape, [1, input.count], file: file, line: line)
        XCTAssertEqual(m.outputs.first?.shape, [1, expected.count], file: file, line: line)
        let out = try m.run([Tensor(shape: [1, input.count], floats: input)])[0].floats()
        for (o, e) in zip(out, expected) { XCTAssertEqual(o, e, accuracy: 1e-6, file: file, line: line) }
        XCTAssertThrowsError(try m.run([Tensor(shape: [2, input.count])]), file: file, line: line)
    }

    // MARK: Shared fixed-batch models

    /// SqueezeNet 1.1 fp16 (float16 I/O, [1,3,224,224]) widens; batch 1 is bit-identical to the
    /// unwidened model and each item of a batch of 2 matches its batch-1 run (within an fp16 step).
    func testSqueezeNetFP16Widens() throws {
        let path = try SharedData.path("models/squeezenet1.1-fp16.onnx")
        let plain = try ONNXLoader.load(path: path)
        let wide = try ONNXLoader.load(path: path, options: Self.widen)
        XCTAssertTrue(wide.widenedBatch)
        XCTAssertEqual(wide.inputs, [TensorSpec(name: "data_0", shape: [-1, 3, 224, 224], dtype: .float16)])
        XCTAssertEqual(wide.outputs.first?.shape, [-1, 1000, 1, 1])
        XCTAssertEqual(wide.outputs.first?.dtype, .float16)

        let n = 3 * 224 * 224
        func pattern(_ k: Int) -> [Float16] {
            (0..<n).map { i -> Float16 in
                let step = (i * 7919 + k * 104_729) % 1000
                return Float16(Float(step) / 4 - 120)
            }
        }
        let items = [pattern(0), pattern(1)]
        func half(_ values: [Float16], batch: Int) -> Tensor {
            let t = Tensor(shape: [batch, 3, 224, 224], dtype: .float16)
            let p = t.pointer(as: Float16.self)
            for (i, v) in values.enumerated() { p[i] = v }
            return t
        }
        let batch = try wide.run([half(items[0] + items[1], batch: 2)])[0]
        XCTAssertEqual(batch.shape.dims, [2, 1000, 1, 1])
        for (k, item) in items.enumerated() {
            let reference = try plain.run([half(item, batch: 1)])[0].floats()
            XCTAssertEqual(try wide.run([half(item, batch: 1)])[0].floats(), reference)
            let got = Array(batch.floats()[(k * 1000)..<(k * 1000 + 1000)])
            XCTAssertLessThanOrEqual(relativeError(got, reference), 1e-3, "item \(k)")
            XCTAssertEqual(argmax(got[...]), argmax(reference[...]), "item \(k)")
        }
    }

    /// light_resnet50's weights are constants, so every input gives the same output: the check cannot
    /// tell a correct batch from one that mixes items, and the model stays as it was.
    func testLightResNet50StaysFixed() throws {
        let name = "light_resnet50"
        let m = try ONNXLoader.load(path: try SharedData.path("models/structure/\(name).onnx"), options: Self.widen)
        XCTAssertFalse(m.widenedBatch)
        XCTAssertEqual(m.inputs.first?.shape, [1, 3, 224, 224])
        let n = 3 * 224 * 224
        let input = Tensor(shape: [1, 3, 224, 224], floats: (0..<n).map { Float($0) / Float(n) })
        let expected = try ONNXLoader.decodeTensorProto(bytes: try SharedData.bytes("models/structure/\(name)_output_0.pb"), name: name)
        XCTAssertLessThan(relativeError(try m.run([input])[0].floats(), expected.floats()), 1e-4)
        XCTAssertThrowsError(try m.run([Tensor(shape: [2, 3, 224, 224])]))
    }
}

/// MNIST's test split from ../shared/datasets/mnist (IDX files, gunzipped by the system's gzip).
enum MNIST {
    /// The first `count` test images (raw 0–255, row-major 28×28) and their labels.
    static func testSplit(first count: Int) throws -> (images: [[Float]], labels: [Int]) {
        let images = try gunzip("datasets/mnist/t10k-images-idx3-ubyte.gz")
        let labels = try gunzip("datasets/mnist/t10k-labels-idx1-ubyte.gz")
        func be32(_ b: [UInt8], _ at: Int) -> Int { b[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        guard images.count >= 16 + count * 784, be32(images, 0) == 0x803, be32(images, 8) == 28, be32(images, 12) == 28,
              labels.count >= 8 + count, be32(labels, 0) == 0x801 else {
            throw EngineError("unexpected MNIST IDX headers")
        }
        return ((0..<count).map { i in images[(16 + i * 784)..<(16 + i * 784 + 784)].map { Float($0) } },
                (0..<count).map { Int(labels[8 + $0]) })
    }

    /// gzip takes well under a second here; the limit is for a slow, loaded machine.
    static func gunzip(_ relative: String) throws -> [UInt8] {
        let result = try ChildProcess.run("/usr/bin/env", ["gzip", "-dc", try SharedData.path(relative)], timeLimit: 120)
        guard result.status == 0 else { throw EngineError("gzip -dc \(relative) failed (exit \(result.status)): \(result.stderr)") }
        return [UInt8](result.stdoutData)
    }
}
