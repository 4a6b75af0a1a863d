import Logging

/// What the transport sends back for one HTTP request carrying JSON-RPC.
public struct RPCHTTPResponse: Sendable {
    /// JSON body; empty when every call was a notification.
    public var body: [UInt8]
    /// 200, or 503 when a single call was refused for overload, or 204 when there is no body.
    public var status: Int
    /// Seconds for `Retry-After`, with 503.
    public var retryAfterSeconds: Int?
}

/// Per-request context handed to method handlers.
public struct RPCContext: Sendable {
    /// True when the caller may use admin methods: it presented an admin API key, or the server
    /// runs without API keys.
    public var isAdmin: Bool
    public init(isAdmin: Bool = true) { self.isAdmin = isAdmin }
}

/// One finished call, as the dispatcher reports it (to record metrics in one place).
public struct RPCCallOutcome: Sendable {
    /// The method called; "" when the request was refused before a method was known.
    public var method: String
    /// The call's params, as sent.
    public var params: JSONValue?
    /// The result, when the call succeeded.
    public var result: JSONValue?
    public var error: RPCError?
    /// The family and variant that served a `classify` answered without a `JSONValue` result.
    public var served: (model: String, variant: String)?
    /// The client went away before the answer (its task was cancelled): neither ok nor a server error.
    public var cancelled: Bool { error?.code == RPCError.cancelledCode }

    public init(method: String, params: JSONValue? = nil, result: JSONValue? = nil, error: RPCError? = nil,
                served: (model: String, variant: String)? = nil) {
        self.method = method
        self.params = params
        self.result = result
        self.error = error
        self.served = served
    }
}

/// JSON-RPC 2.0 dispatch: parses a body (single call or batch), validates each call, runs the method
/// handlers (batch entries concurrently) and assembles the response exactly as the specification says.
public final class RPCDispatcher: Sendable {
    public typealias Handler = @Sendable (_ params: JSONValue?, _ context: RPCContext) async throws -> JSONValue

    private let methods: [String: Handler]
    /// Methods that need `RPCContext.isAdmin`.
    public let adminMethods: Set<String>
    public let maxBatchLength: Int
    let logger: Logger
    let onCall: @Sendable (RPCCallOutcome) -> Void
    /// Runs single-image `classify` calls read straight from the body (`ClassifyCall`); nil when
    /// `classify` is not a method here or is an admin one.
    let classify: ClassifyFastPath?

    /// `onCall` hears of every call, its outcome included, whichever front door it came through.
    /// With `classify`, a single-image `classify` call in the usual shape skips the `JSONValue`
    /// tree (see `ClassifyCall`); its reply and outcome are those the `classify` method would give.
    public init(methods: [String: Handler], adminMethods: Set<String> = [], maxBatchLength: Int = 256,
                logger: Logger = Logger(label: "glimpse.rpc"), classify: ClassifyFastPath? = nil,
                onCall: @escaping @Sendable (RPCCallOutcome) -> Void = { _ in }) {
        self.methods = methods
        self.adminMethods = adminMethods
        self.maxBatchLength = maxBatchLength
        self.logger = logger
        self.onCall = onCall
        self.classify = methods["classify"] != nil && !adminMethods.contains("classify") ? classify : nil
    }

    public var methodNames: [String] { methods.keys.sorted() }

    public func handle(body: [UInt8], context: RPCContext = .init()) async -> RPCHTTPResponse {
        if let classify, let call = body.withUnsafeBufferPointer({ ClassifyCall.parse($0, limits: classify.limits) }) {
            return await run(call, classify)
        }
        // Every other call runs on the global pool, whatever executor the caller prefers: a server
        // may run small calls on a network event loop, and other methods (loading a model, a batch
        // of calls) must not hold it.
        return await withTaskExecutorPreference(globalConcurrentExecutor) {
            await handleDocument(body: body, context: context)
        }
    }

    /// `handle` for a body that is not a plain `classify` call: parsed as a JSON value.
    private func handleDocument(body: [UInt8], context: RPCContext) async -> RPCHTTPResponse {
        let document: JSONValue
        do {
            document = try JSONValue.parse(body)
        } catch {
            let e = RPCError.parseError("\(error)")
            onCall(RPCCallOutcome(method: "", error: e))
            return respond(.object(["jsonrpc": "2.0", "id": .null, "error": e.json]))
        }
        switch document {
        case .array(let calls):
            guard !calls.isEmpty else {
                return respond(errorResponse(id: .null, .invalidRequest("empty batch array")))
            }
            guard calls.count <= maxBatchLength else {
                return respond(errorResponse(id: .null, .invalidRequest("batch of \(calls.count) calls; the limit is \(maxBatchLength)")))
            }
            let replies = await withTaskGroup(of: (Int, JSONValue?).self) { group in
                for (i, call) in calls.enumerated() {
                    group.addTask { (i, await self.handleCall(call, context: context).reply) }
                }
                var out = [JSONValue?](repeating: nil, count: calls.count)
                for await (i, reply) in group { out[i] = reply }
                return out.compactMap { $0 }
            }
            if replies.isEmpty { return RPCHTTPResponse(body: [], status: 204, retryAfterSeconds: nil) }
            return respond(.array(replies))
        default:
            let (reply, error) = await handleCall(document, context: context)
            guard let reply else { return RPCHTTPResponse(body: [], status: 204, retryAfterSeconds: nil) }
            return respond(reply, error: error)
        }
    }

    /// The reply to a single call: 503 with `Retry-After` when it was refused for overload.
    func respond(_ reply: JSONValue, error: RPCError?) -> RPCHTTPResponse {
        if let error, error.code == RPCError.overloadedCode {
            let ms = error.data?["retry_after_ms"]?.intValue ?? 1000
            return RPCHTTPResponse(body: reply.serialized(), status: 503, retryAfterSeconds: max(1, (ms + 999) / 1000))
        }
        return respond(reply)
    }

    /// A `ClassifyCall`, answered as `handleCall` answers `classify`; the result is written straight
    /// from the `ClassifyResult`.
    func run(_ call: ClassifyCall, _ classify: ClassifyFastPath) async -> RPCHTTPResponse {
        do {
            let results = try await classify.run(call.params.request)
            guard let r = results.first else { throw MissingResult() }
            onCall(RPCCallOutcome(method: "classify", served: (r.model, r.variant)))
            var out: [UInt8] = []
            out.reserveCapacity(320 + 64 * r.predictions.count)
            out.append(contentsOf: #"{"id":"#.utf8)
            call.id.write(into: &out)
            out.append(contentsOf: #","jsonrpc":"2.0","result":"#.utf8)
            GlimpseMethods.write(r, into: &out)
            out.append(UInt8(ascii: "}"))
            return RPCHTTPResponse(body: out, status: 200, retryAfterSeconds: nil)
        } catch {
            let e = failed(method: "classify", params: call.requestedModel.map { .object(["model": .string($0)]) }, error)
            return respond(errorResponse(id: call.id, e), error: e)
        }
    }

    /// The service answered a one-image call with no result.
    struct MissingResult: Error {}

    func respond(_ value: JSONValue) -> RPCHTTPResponse {
        RPCHTTPResponse(body: value.serialized(), status: 200, retryAfterSeconds: nil)
    }

    func errorResponse(id: JSONValue, _ error: RPCError) -> JSONValue {
        .object(["jsonrpc": "2.0", "id": id, "error": error.json])
    }

    /// Runs one call. `reply` is nil for a notification.
    func handleCall(_ call: JSONValue, context: RPCContext) async -> (reply: JSONValue?, error: RPCError?) {
        guard case .object(let object) = call else {
            let e = RPCError.invalidRequest("a request must be a JSON object, got \(call.typeName)")
            onCall(RPCCallOutcome(method: "", error: e))
            return (errorResponse(id: .null, e), e)
        }
        // The id, when valid, is echoed even in errors about the rest of the request.
        let idMember = object["id"]
        var id: JSONValue = .null
        if let idMember {
            switch idMember {
            case .double(let d) where !d.isFinite || abs(d) >= 9_007_199_254_740_992:
                // Such a number cannot be echoed back exactly; a reply the client cannot match is worse than an error.
                let e = RPCError.invalidRequest("numeric \"id\" out of range; use a string or an integer below 2^53")
                onCall(RPCCallOutcome(method: "", error: e))
                return (errorResponse(id: .null, e), e)
            case .string, .int, .double, .null: id = idMember
            default:
                let e = RPCError.invalidRequest("\"id\" must be a string, a number or null, got \(idMember.typeName)")
                onCall(RPCCallOutcome(method: "", error: e))
                return (errorResponse(id: .null, e), e)
            }
        }
        guard object["jsonrpc"] == .string("2.0") else {
            let e = RPCError.invalidRequest("\"jsonrpc\" must be exactly \"2.0\"")
            onCall(RPCCallOutcome(method: "", error: e))
            return (errorResponse(id: id, e), e)
        }
        guard case .string(let method)? = object["method"] else {
            let e = RPCError.invalidRequest("\"method\" must be a string")
            onCall(RPCCallOutcome(method: "", error: e))
            return (errorResponse(id: id, e), e)
        }
        let params = object["params"]
        if let params {
            switch params {
            case .object, .array: break
            default:
                let e = RPCError.invalidRequest("\"params\" must be an object or an array, got \(params.typeName)")
                onCall(RPCCallOutcome(method: method, params: params, error: e))
                return (errorResponse(id: id, e), e)
            }
        }
        let isNotification = idMember == nil
        guard let handler = methods[method] else {
            let e = RPCError.methodNotFound(method)
            onCall(RPCCallOutcome(method: method, params: params, error: e))
            return (isNotification ? nil : errorResponse(id: id, e), e)
        }
        if adminMethods.contains(method) && !context.isAdmin {
            let e = RPCError.unauthorized("\(method) is an admin method: send an API key with the admin role (--api-keys), or start the server with --admin-without-auth")
            onCall(RPCCallOutcome(method: method, params: params, error: e))
            return (isNotification ? nil : errorResponse(id: id, e), e)
        }
        switch await perform(method: method, params: params, { try await handler(params, context) }) {
        case .success(let result):
            return (isNotification ? nil : .object(["jsonrpc": "2.0", "id": id, "result": result]), nil)
        case .failure(let e):
            return (isNotification ? nil : errorResponse(id: id, e), e)
        }
    }

    /// Runs the work of one call that has passed the protocol checks: maps its error to JSON-RPC
    /// (logging internal ones, which the client sees only as -32603) and reports the outcome. REST
    /// routes that serve a method run it through here too.
    public func perform(method: String, params: JSONValue?, _ work: () async throws -> JSONValue) async -> Result<JSONValue, RPCError> {
        do {
            let result = try await work()
            // A batch that ran while its client left: the result is dropped with the request.
            if Task.isCancelled { return .failure(failed(method: method, params: params, CancellationError())) }
            onCall(RPCCallOutcome(method: method, params: params, result: result))
            return .success(result)
        } catch {
            return .failure(failed(method: method, params: params, error))
        }
    }

    /// A method's error as JSON-RPC (internal ones logged, -32603 to the client), its outcome reported.
    func failed(method: String, params: JSONValue?, _ error: any Error) -> RPCError {
        // A client that goes away is not a server error: its own outcome, logged below error level.
        if error is CancellationError || (Task.isCancelled && !(error is any RPCErrorConvertible)) {
            logger.debug("\(method) cancelled: the client went away")
            onCall(RPCCallOutcome(method: method, params: params, error: .cancelled))
            return .cancelled
        }
        let (e, isInternal) = RPCError.from(error)
        if isInternal {
            logger.error("internal error in \(method): \(String(describing: error))")
        }
        onCall(RPCCallOutcome(method: method, params: params, error: e))
        return e
    }

    /// Reports a request refused before it reached any method (e.g. without a valid API key).
    public func refused(_ error: RPCError) {
        onCall(RPCCallOutcome(method: "", error: error))
    }
}
