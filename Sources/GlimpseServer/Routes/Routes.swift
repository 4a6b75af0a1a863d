import Foundation
import GlimpseRPC
import GlimpseServing
import HTTPTypes
import Hummingbird
import NIOCore

enum Routes {
    static func add(to router: Router<BasicRequestContext>, configuration: ServerConfiguration, service: InferenceService,
                    dispatcher: RPCDispatcher, state: ServerState, metricsText: (@Sendable () -> [UInt8])?) {
        let maxBody = configuration.maxBodyBytes
        let apiKeys = configuration.apiKeys
        let adminWithoutAuth = configuration.adminWithoutAuth

        /// nil when the caller may go on; otherwise the 401 to send.
        @Sendable func authenticate(_ request: Request, rest: Bool = false) -> (context: RPCContext, refusal: Response?) {
            guard let apiKeys else { return (RPCContext(isAdmin: adminWithoutAuth), nil) }
            guard let key = apiKeys.authenticate(authorization: request.headers[.authorization]) else {
                let e = RPCError.unauthorized("send a valid API key as \"Authorization: Bearer <key>\"")
                let body: JSONValue = rest ? .object(["error": e.json]) : .object(["jsonrpc": "2.0", "id": .null, "error": e.json])
                var response = json(body, status: .unauthorized)
                response.headers[.wwwAuthenticate] = #"Bearer realm="glimpse""#
                dispatcher.refused(e)
                return (RPCContext(isAdmin: false), response)
            }
            return (RPCContext(isAdmin: key.role == .admin), nil)
        }

        router.post("/rpc") { request, _ -> Response in
            let (context, refusal) = authenticate(request)
            if let refusal { return refusal }
            guard let body = await collectBody(request, limit: maxBody) else {
                return json(.object(["jsonrpc": "2.0", "id": .null, "error": tooLarge(maxBody).json]), status: .contentTooLarge)
            }
            let reply = await dispatcher.handle(body: Array(buffer: body), context: context)
            var headers = HTTPFields()
            if let retry = reply.retryAfterSeconds { headers[.retryAfter] = String(retry) }
            if reply.body.isEmpty {
                return Response(status: .noContent, headers: headers)
            }
            headers[.contentType] = "application/json"
            return Response(status: .init(code: reply.status), headers: headers,
                            body: .init(byteBuffer: ByteBuffer(bytes: reply.body)))
        }

        router.post("/v1/classify") { request, _ -> Response in
            if let refusal = authenticate(request, rest: true).refusal { return refusal }
            guard let body = await collectBody(request, limit: maxBody) else {
                return restError(tooLarge(maxBody), status: .contentTooLarge)
            }
            // The same parameter type and checks as JSON-RPC `classify`; the dispatcher maps errors and
            // records the request. Without ?model=, the default model (--default-model) serves.
            let query = request.uri.queryParameters
            let requested: JSONValue = query.get("model").map { .object(["model": .string($0)]) } ?? .object([:])
            let outcome = await dispatcher.perform(method: "classify", params: requested) {
                let params = try ClassifyParams(query: { query.get($0) }, image: Array(buffer: body), limits: service.configuration)
                return try await GlimpseMethods.classify(service: service, params: params)
            }
            switch outcome {
            case .success(let result): return json(result, status: .ok)
            case .failure(let e): return restError(e, status: restStatus(e))
            }
        }

        OpenInferenceRoutes.add(to: router, maxBody: maxBody, service: service, dispatcher: dispatcher, state: state) { request in
            guard authenticate(request, rest: true).refusal != nil else { return nil }
            var response = OpenInferenceRoutes.error(.unauthorized("send a valid API key as \"Authorization: Bearer <key>\""), status: .unauthorized)
            response.headers[.wwwAuthenticate] = #"Bearer realm="glimpse""#
            return response
        }
        addOperational(to: router, service: service, state: state, metricsText: metricsText)
    }

    /// The status page, health, readiness and metrics.
    static func addOperational(to router: Router<BasicRequestContext>, service: InferenceService, state: ServerState,
                               metricsText: (@Sendable () -> [UInt8])?) {
        router.get("/") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "text/html; charset=utf-8"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: StatusPage.html)))
        }

        router.get("/healthz") { _, _ -> Response in
            let (status, body) = InlineRoutes.health()
            return json(body, status: status)
        }

        router.get("/readyz") { _, _ -> Response in
            let (status, body) = InlineRoutes.readiness(service: service, state: state)
            return json(body, status: status)
        }

        router.get("/metrics") { _, _ -> Response in
            guard let metricsText else { return Response(status: .notFound) }
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: metricsText())))
        }
    }

    static func json(_ value: JSONValue, status: HTTPResponse.Status) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: value.serialized())))
    }

    /// The request body, or nil when it is larger than `limit`: refused from `content-length` before
    /// reading, else while it streams in (never buffered past the limit).
    static func collectBody(_ request: Request, limit: Int) async -> ByteBuffer? {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit { return nil }
        return try? await request.body.collect(upTo: limit)
    }

    static func tooLarge(_ limit: Int) -> RPCError {
        .invalidRequest("request body is larger than the limit of \(limit) bytes")
    }

    /// The HTTP status of `POST /v1/classify` for each JSON-RPC error code.
    static func restStatus(_ e: RPCError) -> HTTPResponse.Status {
        switch e.code {
        case RPCError.invalidParamsCode, RPCError.invalidRequestCode: return .badRequest
        case RPCError.overloadedCode, RPCError.modelUnavailableCode: return .serviceUnavailable
        case RPCError.deadlineExceededCode: return .gatewayTimeout
        case RPCError.unauthorizedCode: return .unauthorized
        default: return .internalServerError
        }
    }

    static func restError(_ error: RPCError, status: HTTPResponse.Status) -> Response {
        var response = json(.object(["error": error.json]), status: status)
        if status == .serviceUnavailable, let ms = error.data?["retry_after_ms"]?.intValue {
            response.headers[.retryAfter] = String(max(1, (ms + 999) / 1000))
        }
        return response
    }
}
