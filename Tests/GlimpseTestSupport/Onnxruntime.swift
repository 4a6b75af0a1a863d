import Foundation
import GlimpseTensor

/// Runs an ONNX model in onnxruntime (tools/onnxruntime/run_model.py, in the venv the test set-up
/// installs, or the Python that GLIMPSE_ONNXRUNTIME_PYTHON names) on one float32 input tensor, and
/// returns its first output as float32. Int8 weights run as uint8 (run_model.py), so its int8 results are
/// exact on every CPU, as Glimpse's are, not only where onnxruntime has VNNI.
public enum Onnxruntime {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public static var python: String {
        ProcessInfo.processInfo.environment["GLIMPSE_ONNXRUNTIME_PYTHON"]
            ?? SharedData.repoRoot.appendingPathComponent(".build/onnxruntime-venv/bin/python").path
    }

    /// `folder` receives the input and output files.
    public static func run(model: String, input: Tensor, folder: URL) throws -> [Float] {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw Failure(description: "no onnxruntime at \(python): run scripts/setup.sh --test (or set GLIMPSE_ONNXRUNTIME_PYTHON)")
        }
        let inputFile = folder.appendingPathComponent("inputs.f32"), outputFile = folder.appendingPathComponent("outputs.f32")
        try Data(bytes: input.rawPointer, count: input.byteCount).write(to: inputFile)
        let result = try ChildProcess.run(python, [SharedData.repoRoot.appendingPathComponent("tools/onnxruntime/run_model.py").path, model,
                                                   inputFile.path, outputFile.path, "--shape", input.shape.dims.map(String.init).joined(separator: ",")],
                                          timeLimit: 300)
        guard result.status == 0 else { throw Failure(description: "onnxruntime failed (exit \(result.status)): \(result.log)") }
        return try Data(contentsOf: outputFile).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }
}
