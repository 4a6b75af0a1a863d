import GlimpseRPC
import HTTPTypes
import NIOCore

/// `POST /rpc`, JSON-RPC 2.0: the API key check, the body limit and the dispatcher's reply, in one
/// place. The router serves it (`Routes.add`); the responders (`HTTP2FrameResponder`, `NGHTTP2Responder`,
/// `HTTP1Responder`, through `FrameServing.run`) call it directly for a request to exactly `/rpc`, skipping the router's request,
/// context, response and body-writer types, which cost about a tenth of a small call's CPU outside
/// the engine.
struct RPCRoute: Sendable {
    let dispatcher: RPCDispatcher
    let apiKeys: APIKeys?
    let adminWithoutAuth: Bool
    let maxBody: Int

    static let path = "/rpc"

    init(configuration: ServerConfiguration, dispatcher: RPCDispatcher) {
        self.dispatcher = dispatcher
        apiKeys = configuration.apiKeys
        adminWithoutAuth = configuration.adminWithoutAuth
        maxBody = configuration.maxBodyBytes
    }

    /// A request the responders hand to `respond` rather than to the router: `POST /rpc`, no query.
    static func takes(_ head: HTTPRequest) -> Bool {
        head.method == .post && head.path == path
    }

    /// The caller's context, or the error that refuses the call (no valid API key).
    func authenticate(authorization: String?) -> Result<RPCContext, RPCError> {
        guard let apiKeys else { return .success(RPCContext(isAdmin: adminWithoutAuth)) }
        guard let key = apiKeys.authenticate(authorization: authorization) else {
            let e = RPCError.unauthorized("send a valid API key as \"Authorization: Bearer <key>\"")
            dispatcher.refused(e)
            return .failure(e)
        }
        return .success(RPCContext(isAdmin: key.role == .admin))
    }

    /// The answer to a call; `body` nil: it was over `maxBody`.
    func respond(authorization: String?, body: ByteBuffer?) async -> CollectedResponse {
        await respond(authenticate(authorization: authorization), body: body)
    }

    /// The answer to a call whose key was checked (`authenticate`); `body` nil: over `maxBody`.
    func respond(_ authenticated: Result<RPCContext, RPCError>, body: ByteBuffer?) async -> CollectedResponse {
        let context: RPCContext
        switch authenticated {
        case .success(let c): context = c
        case .failure(let e): return Self.refusal(e)
        }
        guard let body else {
            return CollectedResponse(head: Self.json(status: .contentTooLarge), body: Self.envelope(Self.tooLarge(maxBody)))
        }
        let reply = await dispatcher.handle(body: Array(buffer: body), context: context)
        var head = HTTPResponse(status: .init(code: reply.status))
        if let retry = reply.retryAfterSeconds { head.headerFields[.retryAfter] = String(retry) }
        if reply.body.isEmpty {
            head.status = .noContent
            return CollectedResponse(head: head, body: ByteBuffer())
        }
        head.headerFields[.contentType] = "application/json"
        return CollectedResponse(head: head, body: ByteBuffer(bytes: reply.body))
    }

    /// 401 with the JSON-RPC error and the bearer challenge.
    static func refusal(_ e: RPCError) -> CollectedResponse {
        var head = json(status: .unauthorized)
        head.headerFields[.wwwAuthenticate] = bearerChallenge
        return CollectedResponse(head: head, body: envelope(e))
    }

    static let bearerChallenge = #"Bearer realm="glimpse""#

    static func tooLarge(_ limit: Int) -> RPCError {
        .invalidRequest("request body is larger than the limit of \(limit) bytes")
    }

    private static func json(status: HTTPResponse.Status) -> HTTPResponse {
        HTTPResponse(status: status, headerFields: [.contentType: "application/json"])
    }

    /// A JSON-RPC error reply with a null id: the call was refused before it was read.
    private static func envelope(_ e: RPCError) -> ByteBuffer {
        ByteBuffer(bytes: JSONValue.object(["jsonrpc": "2.0", "id": .null, "error": e.json]).serialized())
    }
}
