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
        let rpc = RPCRoute(configuration: configuration, dispatcher: dispatcher)

        /// The REST routes' 401 (`{"error": …}`), or nil when the caller may go on.
        @Sendable func restRefusal(_ request: Request) -> Response? {
            guard case .failure(let e) = rpc.authenticate(authorization: request.headers[.authorization]) else { return nil }
            var response = json(.object(["error": e.json]), status: .unauthorized)
            response.headers[.wwwAuthenticate] = RPCRoute.bearerChallenge
            return response
        }

        // The responders answer `POST /rpc` through `rpc` directly; this serves the other transports
        // and `/rpc` with a query string.
        router.post("/rpc") { request, _ -> Response in
            let authenticated = rpc.authenticate(authorization: request.headers[.authorization])
            if case .failure(let e) = authenticated { return response(RPCRoute.refusal(e)) }
            let body = await collectBody(request, limit: maxBody)
            return response(await rpc.respond(authenticated, body: body))
        }

        router.post("/v1/classify") { request, _ -> Response in
            if let refusal = restRefusal(request) { return refusal }
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
            guard case .failure(let e) = rpc.authenticate(authorization: request.headers[.authorization]) else { return nil }
            var response = OpenInferenceRoutes.error(e, status: .unauthorized)
            response.headers[.wwwAuthenticate] = RPCRoute.bearerChallenge
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

    static func response(_ collected: CollectedResponse) -> Response {
        Response(status: collected.head.status, headers: collected.head.headerFields, body: .init(byteBuffer: collected.body))
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

    static func tooLarge(_ limit: Int) -> RPCError { RPCRoute.tooLarge(limit) }

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
