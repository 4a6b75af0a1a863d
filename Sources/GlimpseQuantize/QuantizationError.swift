/// Why quantization or its report failed. `code` is stable; the message names the file, tensor or
/// node involved.
public struct QuantizationError: Error, CustomStringConvertible, Sendable, Hashable {
    public enum Code: String, Sendable {
        /// The input is not a readable ONNX model (empty, truncated, not protobuf, no graph).
        case malformedModel = "malformed_model"
        /// The model is valid but uses something the quantizer does not handle (opset, external data).
        case unsupportedModel = "unsupported_model"
        /// A bad argument (bit width, paths, image folder).
        case invalidArgument = "invalid_argument"
        /// The written variant failed to load or run in the engine.
        case verificationFailed = "verification_failed"
        /// Reading or writing a file failed.
        case io
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
