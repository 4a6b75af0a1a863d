import GlimpseRPC
import GlimpseServing
import HTTPTypes
import Hummingbird
import NIOCore

/// The Open Inference Protocol (KServe v2, as Triton and MLServer speak it) beside JSON-RPC, on the
/// same router: the same port, API keys (for a model's metadata, readiness and infer; health and the
/// server metadata stay open, as /healthz and /readyz are), body limit and drain. Infer runs through the dispatcher
/// (`v2.infer` in metrics) and the serving path `classify` uses.
enum OpenInferenceRoutes {
    /// The version `GET /v2` reports.
    static let serverVersion = "1.0"
    static let headerLength = HTTPField.Name("Inference-Header-Content-Length")!

    static func add(to router: Router<BasicRequestContext>, maxBody: Int, service: InferenceService, dispatcher: RPCDispatcher,
                    state: ServerState, authenticate: @escaping @Sendable (Request) -> Response?) {
        // Health is open, as /healthz and /readyz are: probes carry no API key. The status is the answer;
        // the small JSON body is what KServe's own server sends, and its InferenceRESTClient reads it.
        router.get("/v2/health/live") { _, _ -> Response in
            Routes.json(["live": true], status: .ok)
        }
        router.get("/v2/health/ready") { _, _ -> Response in
            let ready = !service.registry.all.isEmpty && !state.draining
            return Routes.json(["ready": .bool(ready)], status: ready ? .ok : .serviceUnavailable)
        }
        router.get("/v2") { _, _ -> Response in
            Routes.json(V2Metadata.server(version: serverVersion), status: .ok)
        }
        for prefix in ["/v2/models/:name", "/v2/models/:name/versions/:version"] {
            // A model's metadata and readiness name what is loaded: with API keys configured they ask
            // for one, as `models.list` does over JSON-RPC; so does infer.
            router.get(RouterPath(prefix)) { request, context -> Response in
                if let refusal = authenticate(request) { return refusal }
                return lookup(context, service: service) { Routes.json(V2Metadata.model($0), status: .ok) }
            }
            router.get(RouterPath(prefix + "/ready")) { request, context -> Response in
                if let refusal = authenticate(request) { return refusal }
                return lookup(context, service: service) { _ in Response(status: state.draining ? .serviceUnavailable : .ok) }
            }
            router.post(RouterPath(prefix + "/infer")) { request, context -> Response in
                if let refusal = authenticate(request) { return refusal }
                guard let body = await Routes.collectBody(request, limit: maxBody) else {
                    return error(Routes.tooLarge(maxBody), status: .contentTooLarge)
                }
                return await infer(request, body: Array(buffer: body), context: context, service: service, dispatcher: dispatcher)
            }
        }
    }

    /// The model the path names, or the protocol's 404.
    static func lookup(_ context: BasicRequestContext, service: InferenceService, _ found: (LoadedModel) -> Response) -> Response {
        let name = context.parameters.get("name") ?? ""
        do {
            return found(try V2Metadata.model(name, version: context.parameters.get("version"), registry: service.registry))
        } catch let e as RPCError {
            return error(e, status: status(e))
        } catch {
            return Self.error(.internalError, status: .internalServerError)
        }
    }

    static func infer(_ request: Request, body: [UInt8], context: BasicRequestContext, service: InferenceService,
                      dispatcher: RPCDispatcher) async -> Response {
        let name = context.parameters.get("name") ?? ""
        let version = context.parameters.get("version")
        let declared = request.headers[Self.headerLength]
        var reply: V2InferReply?
        let outcome = await dispatcher.perform(method: "v2.infer", params: ["model": .string(name)]) {
            if let version { _ = try V2Metadata.model(name, version: version, registry: service.registry) }
            guard declared == nil || Int(declared ?? "") != nil else {
                throw RPCError.invalidRequest("Inference-Header-Content-Length must be a byte count")
            }
            let parsed = try V2InferRequest(body: body, headerLength: declared.flatMap { Int($0) }, model: name,
                                            limits: service.configuration)
            let r = try await V2Inference.infer(service: service, request: parsed)
            reply = r
            return r.summary
        }
        switch outcome {
        case .failure(let e):
            return error(e, status: status(e))
        case .success:
            guard let reply else { return error(.internalError, status: .internalServerError) }
            var headers = HTTPFields()
            if let length = reply.headerLength {
                headers[.contentType] = "application/octet-stream"
                headers[Self.headerLength] = String(length)
            } else {
                headers[.contentType] = "application/json"
            }
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: reply.body)))
        }
    }

    /// HTTP status of a v2 error: 404 for an unknown model, 400 for a bad request, 503 (with
    /// `Retry-After`) when overloaded or unavailable, 504 past the deadline.
    static func status(_ e: RPCError) -> HTTPResponse.Status {
        if e.data?["reason"]?.stringValue == "unknown_model" { return .notFound }
        switch e.code {
        case RPCError.parseErrorCode: return .badRequest
        default: return Routes.restStatus(e)
        }
    }

    /// The protocol's error body: `{"error": "<message>"}`.
    static func error(_ e: RPCError, status: HTTPResponse.Status) -> Response {
        var response = Routes.json(["error": .string(e.message)], status: status)
        if status == .serviceUnavailable {
            let ms = e.data?["retry_after_ms"]?.intValue ?? 1000
            response.headers[.retryAfter] = String(max(1, (ms + 999) / 1000))
        }
        return response
    }
}
