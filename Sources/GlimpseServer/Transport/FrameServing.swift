import HTTPTypes
import Hummingbird
import Logging
import NIOCore

extension GlimpseHTTPChannel.FrameServing {
    /// Starts the task that answers a request the responder does not answer in place: `POST /rpc`
    /// through `RPCRoute`, every other route through the router. `body` nil: it was over the limit
    /// (reading it fails, so the route answers with its own "too large" error). `done` gets the
    /// answer on the task; the responder carries it to its event loop.
    func run(_ head: HTTPRequest, body: ByteBuffer?, channel: any Channel,
             done: @escaping @Sendable (CollectedResponse) -> Void) -> Task<Void, Never> {
        if RPCRoute.takes(head) {
            let rpc = self.rpc, authorization = head.headerFields[.authorization]
            // No preference (nil): the global pool, as `Task {}`.
            let onLoop = body.map { $0.readableBytes <= Self.loopBodyLimit } ?? false
            return Task(executorPreference: onLoop ? EventLoopTaskExecutor(channel.eventLoop) : nil) {
                done(await rpc.respond(authorization: authorization, body: body))
            }
        }
        let request = Request(head: head, body: body.map { RequestBody(buffer: $0) } ?? RequestBody(asyncSequence: TooLargeBody()))
        let context = BasicRequestContext(source: .init(channel: channel, logger: logger))
        let responder = self.responder, logger = self.logger
        return Task { done(await respondCollecting(request, context: context, responder: responder, logger: logger)) }
    }

    /// `/rpc` bodies up to this size run their task on the connection's event loop
    /// (`EventLoopTaskExecutor`); larger ones on the global pool, so that reading a large body
    /// (its JSON, its base64) does not hold up the loop's other streams.
    static let loopBodyLimit = 64 << 10
}
