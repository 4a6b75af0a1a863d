import GlimpseRPC
import GlimpseServing
import HTTPTypes
import NIOCore

/// The routes whose answers need no waiting (health and readiness). HTTP/2 answers them on the
/// connection's event loop, without a task (`HTTP2FrameResponder`); the router serves the same
/// answers to HTTP/1.1 (`Routes.addOperational`).
struct InlineRoutes: Sendable {
    let service: InferenceService
    let state: ServerState

    static func health() -> (HTTPResponse.Status, JSONValue) {
        (.ok, ["status": "ok"])
    }

    static func readiness(service: InferenceService, state: ServerState) -> (HTTPResponse.Status, JSONValue) {
        let models = service.registry.all.count
        let ready = models > 0 && !state.draining
        return (ready ? .ok : .serviceUnavailable, ["ready": .bool(ready), "models": .int(models), "draining": .bool(state.draining)])
    }

    /// The answer to `head`, or nil for a request the router answers.
    func answer(_ head: HTTPRequest) -> (head: HTTPResponse, body: ByteBuffer)? {
        guard head.method == .get, let target = head.path else { return nil }
        let path = target.firstIndex(of: "?").map { target[..<$0] } ?? target[...]
        let answer: (HTTPResponse.Status, JSONValue)
        switch path {
        case "/healthz": answer = Self.health()
        case "/readyz": answer = Self.readiness(service: service, state: state)
        default: return nil
        }
        return (HTTPResponse(status: answer.0, headerFields: [.contentType: "application/json"]), ByteBuffer(bytes: answer.1.serialized()))
    }
}
