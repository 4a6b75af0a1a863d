import Foundation
import GlimpseEngine
import GlimpseTensor

/// Loads ONNX files into compiled engine models.
public enum ONNXLoader {
    /// Reads, imports and compiles the model at `path`. Errors name the file, and for unsupported
    /// operators the op type and node name.
    /// `verify`, when given, sees the file's bytes before they are imported, and may refuse them by
    /// throwing (a checksum).
    public static func load(path: String, options: EngineOptions = .init(),
                            verify: (([UInt8]) throws -> Void)? = nil) throws -> CompiledModel {
        let name = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        let weights = MemoryLedger()
        return try weights.charging {
            // The file's bytes are freed once imported, before the weights are packed and planned.
            let graph = try {
                let bytes = try readFile(path)
                try verify?(bytes)
                return try importGraph(bytes: bytes, name: name)
            }()
            return try compile(graph, name: name, options: options, weights: weights)
        }
    }

    /// Same as `load(path:)`, from bytes already in memory; `name` is used in error messages.
    /// The imported constants and the packed weights are charged to the model's `weightMemory`.
    /// With `outputs`, the model runs only up to the tensors of those names, which become its
    /// outputs (float32), in that order (see `Graph.cut(at:)`).
    public static func load(bytes: [UInt8], name: String, options: EngineOptions = .init(),
                            outputs: [String]? = nil) throws -> CompiledModel {
        let weights = MemoryLedger()
        return try weights.charging {
            let graph = try importGraph(bytes: bytes, name: name)
            if let outputs { try graph.cut(at: outputs) }
            return try compile(graph, name: name, options: options, weights: weights)
        }
    }

    /// Optimizes and compiles an imported graph, inside `weights.charging`.
    private static func compile(_ graph: Graph, name: String, options: EngineOptions, weights: MemoryLedger) throws -> CompiledModel {
        try GraphOptimizer.rewrite(graph)
        // The kernels pack the constants their nodes read into copies of about the same size,
        // which the model then holds: refuse before those copies are allocated.
        if let budget = options.weightBudgetBytes {
            let needed = packedEstimate(graph)
            if needed > budget { throw WeightBudgetExceeded(model: name, neededBytes: needed, budgetBytes: budget) }
        }
        try GraphOptimizer.prepare(graph)
        return try CompiledModel(graph: graph, options: options, weightMemory: weights)
    }

    /// The whole file at `path`, read straight into one array (no second copy through `Data`).
    static func readFile(_ path: String) throws -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw EngineError("cannot read model file \(path)") }
        defer { try? handle.close() }
        let size = Int((try? handle.seekToEnd()) ?? 0)
        try? handle.seek(toOffset: 0)
        var bytes = [UInt8](repeating: 0, count: size)
        var filled = 0
        let fd = handle.fileDescriptor
        while filled < size {
            let n = bytes.withUnsafeMutableBytes { buffer in
                buffer.baseAddress.map { read(fd, $0 + filled, size - filled) } ?? 0
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw EngineError("cannot read model file \(path): short read at byte \(filled) of \(size)") }
            filled += n
        }
        return bytes
    }

    /// Bytes of the constants that nodes read (each counted once): about what the kernels' packed
    /// copies of them take, a lower bound (the copies round rows up to whole tiles).
    static func packedEstimate(_ graph: Graph) -> Int {
        var seen = Set<Int>()
        var bytes = 0
        for node in graph.nodes {
            for v in node.inputs where graph.isConstant(v) && seen.insert(v).inserted {
                if let t = graph.constant(v) { bytes += t.shape.count * t.dtype.byteSize }
            }
        }
        return bytes
    }

    /// Decodes a serialized TensorProto (e.g. the `output_0.pb` files of ONNX test data).
    public static func decodeTensorProto(bytes: [UInt8], name: String) throws -> Tensor {
        var reader = ProtoReader(bytes: bytes, context: "TensorProto \(name)")
        return try TensorDecoding.decode(try ONNXTensorProto(reader: &reader), model: name)
    }

    /// Parses and imports without optimizing (for tests and tools).
    public static func importGraph(bytes: [UInt8], name: String) throws -> Graph {
        guard !bytes.isEmpty else { throw EngineError("\(name): empty model file") }
        let model = try ONNXModel(bytes: bytes, name: name)
        return try ONNXImporter.importGraph(model, name: name)
    }
}
