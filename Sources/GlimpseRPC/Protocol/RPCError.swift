import GlimpseImage
import GlimpseServing

/// A JSON-RPC 2.0 error object.
public struct RPCError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: Int
    public var message: String
    public var data: JSONValue?

    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public var description: String { "JSON-RPC error \(code): \(message)" }

    public var json: JSONValue {
        var o: [String: JSONValue] = ["code": .int(code), "message": .string(message)]
        if let data { o["data"] = data }
        return .object(o)
    }

    // Standard codes (JSON-RPC 2.0 §5.1).
    public static let parseErrorCode = -32700
    public static let invalidRequestCode = -32600
    public static let methodNotFoundCode = -32601
    public static let invalidParamsCode = -32602
    public static let internalErrorCode = -32603
    // Server codes (Glimpse).
    public static let overloadedCode = -32000
    public static let deadlineExceededCode = -32001
    public static let modelUnavailableCode = -32002
    public static let unauthorizedCode = -32003
    /// The client went away (stream reset, connection closed) before the answer: no one receives it.
    public static let cancelledCode = -32004

    public static func parseError(_ detail: String) -> RPCError {
        RPCError(code: parseErrorCode, message: "Parse error: \(detail)")
    }
    public static func invalidRequest(_ detail: String) -> RPCError {
        RPCError(code: invalidRequestCode, message: "Invalid Request: \(detail)")
    }
    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(code: methodNotFoundCode, message: "Method not found: \"\(method)\"", data: ["method": .string(method)])
    }
    public static func invalidParams(_ detail: String, reason: String = "bad_parameter", data: [String: JSONValue] = [:]) -> RPCError {
        var d = data
        d["reason"] = .string(reason)
        return RPCError(code: invalidParamsCode, message: "Invalid params: \(detail)", data: .object(d))
    }
    public static func unauthorized(_ detail: String) -> RPCError {
        RPCError(code: unauthorizedCode, message: "Unauthorized: \(detail)")
    }
    /// A call whose client left: recorded with the outcome `cancelled`, never sent.
    public static let cancelled = RPCError(code: cancelledCode, message: "Request cancelled: the client went away",
                                           data: ["reason": "cancelled"])

    public static let internalError = RPCError(code: internalErrorCode, message: "Internal error: the server failed to process the request; see server logs")
}

/// Errors that know their JSON-RPC form. The mapping of every library error lives here, in one place.
public protocol RPCErrorConvertible: Error {
    var rpcError: RPCError { get }
}

extension RPCError: RPCErrorConvertible {
    public var rpcError: RPCError { self }
}

extension ServingError: RPCErrorConvertible {
    public var rpcError: RPCError {
        switch self {
        case .unknownModel(let m):
            return .invalidParams(m, reason: "unknown_model")
        case .badParameter(let m):
            return .invalidParams(m)
        case .overloaded(let reason, let retry):
            return RPCError(code: RPCError.overloadedCode, message: "Server overloaded: \(reason)",
                            data: ["reason": .string(reason), "retry_after_ms": .int(retry)])
        case .deadlineExceeded(let m):
            return RPCError(code: RPCError.deadlineExceededCode, message: "Deadline exceeded: \(m)", data: ["reason": "deadline_exceeded"])
        case .modelUnavailable(let m):
            return RPCError(code: RPCError.modelUnavailableCode, message: "Model unavailable: \(m)", data: ["reason": "model_unavailable"])
        }
    }
}

extension ImageError: RPCErrorConvertible {
    public var rpcError: RPCError { .invalidParams(message, reason: kind.rawValue) }
}

extension RPCError {
    /// Maps any error to its JSON-RPC form; unknown errors become -32603 without internals.
    public static func from(_ error: any Error) -> (error: RPCError, isInternal: Bool) {
        if let e = error as? any RPCErrorConvertible { return (e.rpcError, false) }
        return (.internalError, true)
    }
}
