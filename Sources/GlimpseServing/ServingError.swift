/// Errors of the serving layer. GlimpseRPC maps each to a JSON-RPC code in one place.
public enum ServingError: Error, CustomStringConvertible, Sendable, Equatable {
    /// No model or family of that name (-32602).
    case unknownModel(String)
    /// A parameter is missing or wrong (-32602).
    case badParameter(String)
    /// Queue full or deadline cannot be met (-32000).
    case overloaded(reason: String, retryAfterMs: Int)
    /// The request's deadline passed (-32001).
    case deadlineExceeded(String)
    /// The model exists but cannot serve now (-32002).
    case modelUnavailable(String)

    public var description: String {
        switch self {
        case .unknownModel(let m), .badParameter(let m), .deadlineExceeded(let m), .modelUnavailable(let m): return m
        case .overloaded(let reason, let retry): return "server overloaded (\(reason)); retry after \(retry) ms"
        }
    }
}
