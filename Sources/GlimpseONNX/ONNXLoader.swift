import GlimpseEngine
import GlimpseTensor

/// Loads ONNX files into compiled engine models.
public enum ONNXLoader {
    /// Reads, imports and compiles the model at `path`. Errors name the file, and for unsupported
    /// operators the op type and node name.
    public static func load(path: String, options: EngineOptions = .init()) throws -> CompiledModel {
        throw EngineError("ONNX import not implemented yet (\(path))")
    }

    /// Same as `load(path:)`, from bytes already in memory; `name` is used in error messages.
    public static func load(bytes: [UInt8], name: String, options: EngineOptions = .init()) throws -> CompiledModel {
        throw EngineError("ONNX import not implemented yet (\(name))")
    }
}
