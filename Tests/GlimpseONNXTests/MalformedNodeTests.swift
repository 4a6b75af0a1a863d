import GlimpseEngine
@testable import GlimpseONNX
import XCTest

/// The smallest ONNX files, written field by field (protobuf wire format), for nodes the importer must
/// refuse with an error rather than hand to an operator that indexes its inputs.
enum TinyONNX {
    static func varint(_ v: Int) -> [UInt8] {
        var v = UInt64(v), out: [UInt8] = []
        while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        return out + [UInt8(v)]
    }
    static func field(_ number: Int, _ payload: [UInt8]) -> [UInt8] { varint(number << 3 | 2) + varint(payload.count) + payload }
    static func field(_ number: Int, _ text: String) -> [UInt8] { field(number, Array(text.utf8)) }
    static func int(_ number: Int, _ value: Int) -> [UInt8] { varint(number << 3) + varint(value) }

    /// A float32 value [1, 4] named `name` (ValueInfoProto).
    static func valueInfo(_ name: String) -> [UInt8] {
        let dims = field(1, int(1, 1)) + field(1, int(1, 4))
        return field(1, name) + field(2, field(1, int(1, 1) + field(2, dims)))
    }

    /// An int64 initializer (TensorProto: dims, data_type 7, name, raw_data).
    static func int64Tensor(_ name: String, _ values: [Int64]) -> [UInt8] {
        int(1, values.count) + int(2, 7) + field(8, name) + field(9, values.flatMap { v in (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } })
    }

    /// A NodeProto without attributes.
    static func node(_ opType: String, inputs: [String], output: String, name: String, domain: String = "") -> [UInt8] {
        inputs.flatMap { field(1, $0) } + field(2, output) + field(3, name) + field(4, opType) + (domain.isEmpty ? [] : field(7, domain))
    }

    /// A model with graph input "x", one node `opType` reading `inputs` and writing "y", output "y";
    /// `before` are nodes placed ahead of it (NodeProto bytes).
    static func model(opType: String, inputs: [String], domain: String = "", opset: Int = 13,
                      initializers: [[UInt8]] = [], before: [[UInt8]] = []) -> [UInt8] {
        let nodes = before + [node(opType, inputs: inputs, output: "y", name: "n", domain: domain)]
        let graph = nodes.flatMap { field(1, $0) } + field(2, "g") + initializers.flatMap { field(5, $0) } + field(11, valueInfo("x")) + field(12, valueInfo("y"))
        var opsets = field(8, field(1, "") + int(2, opset))
        if !domain.isEmpty { opsets += field(8, field(1, domain) + int(2, 1)) }
        return int(1, 8) + opsets + field(7, graph)
    }
}

final class MalformedNodeTests: XCTestCase {
    /// Found by fuzzing (scripts/fuzz.sh onnx): a ConstantOfShape node with no input trapped in
    /// `ConstantOfShapeOp.inferTypes` (constant folding) instead of throwing.
    func testConstantOfShapeWithoutInputThrows() {
        XCTAssertThrowsError(try ONNXLoader.load(bytes: TinyONNX.model(opType: "ConstantOfShape", inputs: []), name: "tiny")) { e in
            XCTAssertTrue("\(e)".contains("ConstantOfShape node 'n': 0 inputs; ConstantOfShape takes 1"), "\(e)")
        }
    }

    /// A shape whose element count overflows `Int` trapped in the size check; a shape over 512 MiB
    /// (1 GiB as float here) throws before anything is allocated.
    func testConstantOfShapeTooLargeThrows() {
        for dims: [Int64] in [[2_147_483_647, 2_147_483_647, 2_147_483_647], [1 << 16, 1 << 15], [1 << 14, 1 << 14]] {
            let bytes = TinyONNX.model(opType: "ConstantOfShape", inputs: ["s"], initializers: [TinyONNX.int64Tensor("s", dims)])
            XCTAssertThrowsError(try ONNXLoader.load(bytes: bytes, name: "tiny")) { e in
                XCTAssertTrue("\(e)".contains("too large"), "\(e)")
            }
        }
        let fits = TinyONNX.model(opType: "ConstantOfShape", inputs: ["s"], initializers: [TinyONNX.int64Tensor("s", [1, 4])])
        XCTAssertNoThrow(try ONNXLoader.importGraph(bytes: fits, name: "tiny"))
    }

    /// Found by fuzzing (finding 4): a 15 KB file folded a weight of about 1 GiB with ConstantOfShape
    /// and the kernel's packed copy of it allocated 1.2 GB more. The packed copies are now charged to
    /// the weight budget before they are allocated: here a 16 MiB folded MatMul weight needs 32 MiB
    /// with its copy, refused under a 24 MiB budget and loaded under 64 MiB.
    func testPackedWeightsAreChargedBeforeTheyAreAllocated() throws {
        func model(columns: Int64) -> [UInt8] {
            TinyONNX.model(opType: "MatMul", inputs: ["x", "w"], initializers: [TinyONNX.int64Tensor("s", [4, columns])],
                           before: [TinyONNX.node("ConstantOfShape", inputs: ["s"], output: "w", name: "fill")])
        }
        var tight = EngineOptions()
        tight.weightBudgetBytes = 12 << 20
        XCTAssertThrowsError(try ONNXLoader.load(bytes: model(columns: 1 << 20), name: "tiny", options: tight)) { e in
            XCTAssertTrue(e is WeightBudgetExceeded, "\(e)")
            XCTAssertEqual("\(e)", "tiny: its weights need at least 16.0 MiB, over the 12.0 MiB left in the memory budget")
        }
        var roomy = EngineOptions()
        roomy.weightBudgetBytes = 64 << 20
        let fits = try ONNXLoader.load(bytes: model(columns: 4), name: "tiny", options: roomy)
        XCTAssertEqual(fits.inputs.first?.name, "x")
    }

    /// Found by fuzzing: a float initializer with dims [1 << 30, 10] and no data made the decoder
    /// allocate 40 GB before it checked the data; now it throws at once.
    func testInitializerLargerThanItsDataThrows() {
        let tensor = TinyONNX.int(1, 1 << 30) + TinyONNX.int(1, 10) + TinyONNX.int(2, 1) + TinyONNX.field(8, "w")
        let bytes = TinyONNX.model(opType: "Relu", inputs: ["x"], initializers: [tensor])
        XCTAssertThrowsError(try ONNXLoader.load(bytes: bytes, name: "tiny")) { e in
            XCTAssertTrue("\(e)".contains("tensor 'w': dims [1073741824, 10] need 10737418240 values; the tensor holds 0"), "\(e)")
        }
    }

    /// Every registered operator, with too few inputs, an empty required input and too many inputs:
    /// an error naming the node, never a trap.
    func testEveryOperatorChecksItsInputCount() throws {
        XCTAssertEqual(Set(OperatorRegistry.builders.keys), Set(OperatorRegistry.inputCounts.keys).subtracting(["Reshape@<5"]))
        for (key, range) in OperatorRegistry.inputCounts where key != "Reshape@<5" {
            let parts = key.split(separator: ":").map(String.init)
            let (domain, op) = parts.count == 2 ? (parts[0], parts[1]) : ("", key)
            var cases = [Array(repeating: "x", count: range.lowerBound - 1)]
            cases.append([""] + Array(repeating: "x", count: range.lowerBound - 1))
            if range.upperBound < 16 { cases.append(Array(repeating: "x", count: range.upperBound + 1)) }
            for inputs in cases {
                XCTAssertThrowsError(try ONNXLoader.load(bytes: TinyONNX.model(opType: op, inputs: inputs, domain: domain), name: "tiny"),
                                     "\(key) with inputs \(inputs)") { e in
                    XCTAssertTrue("\(e)".contains("\(op) node 'n'"), "\(e)")
                }
            }
        }
    }

    /// The writer's files import when the node is well formed.
    func testWellFormedTinyModelLoads() throws {
        let model = try ONNXLoader.load(bytes: TinyONNX.model(opType: "Relu", inputs: ["x"]), name: "tiny")
        XCTAssertEqual(model.inputs.first?.name, "x")
    }
}
