import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTPTypes

/// Answers an HTTP/1.1 connection's requests in its pipeline, on its event loop: the counterpart of
/// `HTTP2FrameResponder`. Hummingbird's HTTP/1.1 handling reads each connection through an
/// `NIOAsyncChannel` in a task, so every request part and every response write crosses between the
/// event loop and that task. Here the request is collected in place (its body up to the limit),
/// health and readiness are answered at once (`InlineRoutes`), and every other request runs the same
/// router in one task, whose response is written back on the event loop in one flush.
///
/// NIO's `HTTPServerPipelineHandler` (added with pipelining assistance) holds back a pipelined
/// request until the response before it has ended, handles a client's half-closure and the drain's
/// quiesce, and `HTTPServerProtocolErrorHandler` answers a request it cannot parse with 400 and
/// closes. A request with `Connection: close` is answered, then its connection closed. A request with
/// `Expect: 100-continue` gets its interim 100 response at once.
final class HTTP1Responder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    private let serving: GlimpseHTTPChannel.FrameServing
    private var context: ChannelHandlerContext?
    /// The request being read: its head, its body so far, and whether the body went over the limit.
    private var head: HTTPRequest?
    private var body = ByteBuffer()
    private var tooLarge = false
    /// The request running in a task (one at a time: the pipeline handler holds back the next).
    private var running: Task<Void, Never>?
    private var flushing = ReadTurnFlush()
    /// The client closed its side: the connection closes once the request in hand is answered.
    private var inputClosed = false

    init(serving: GlimpseHTTPChannel.FrameServing) {
        self.serving = serving
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        running?.cancel()
        running = nil
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        running?.cancel()
        running = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        flushing.readStarted()
        switch unwrapInboundIn(data) {
        case .head(let request):
            head = request
            body.clear()
            tooLarge = false
            // A client that asks before sending its body (curl does for bodies over 1 MiB) is told
            // to go on at once rather than after its own wait (RFC 9110 §10.1.1).
            if request.headerFields[.expect]?.lowercased() == "100-continue" {
                context.write(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
                context.flush()
            }
        case .body(let chunk):
            guard !tooLarge else { return }
            if body.readableBytes + chunk.readableBytes > serving.maxBody {
                // The rest is read and dropped; the route answers with its "too large" error.
                tooLarge = true
                body = ByteBuffer()
            } else {
                body.writeImmutableBuffer(chunk)
            }
        case .end:
            guard let request = head else { return }
            head = nil
            let collected = tooLarge ? nil : body
            body = ByteBuffer()
            dispatch(request, body: collected, context: context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            inputClosed = true
            if running == nil, head == nil { context.close(promise: nil) }
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// A request that cannot be parsed has had its 400 from `HTTPServerProtocolErrorHandler`, which
    /// passes the error on: the connection goes.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        serving.logger.debug("HTTP/1.1 connection error, closing", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushing.readComplete(context)
        context.fireChannelReadComplete()
    }

    /// Answers a request; `body` nil: it was over the limit, and reading it fails, so its route
    /// answers with its own "too large" error.
    private func dispatch(_ request: HTTPRequest, body: ByteBuffer?, context: ChannelHandlerContext) {
        let closes = request.headerFields[.connection]?.lowercased() == "close"
        if let answer = serving.inline.answer(request) {
            write(answer.head, body: answer.body, method: request.method, closes: closes, context: context)
            return
        }
        let method = request.method, loop = context.eventLoop
        let bound = NIOLoopBound(self, eventLoop: loop)
        running = serving.run(request, body: body, channel: context.channel) { answer in
            loop.execute { bound.value.finish(answer, method: method, closes: closes) }
        }
    }

    /// The task's response is ready: written unless the connection went meanwhile.
    private func finish(_ answer: CollectedResponse, method: HTTPRequest.Method, closes: Bool) {
        guard let context, running != nil else { return }
        running = nil
        write(answer.head, body: answer.body, method: method, closes: closes, context: context)
    }

    private func write(_ head: HTTPResponse, body: ByteBuffer, method: HTTPRequest.Method, closes: Bool,
                       context: ChannelHandlerContext) {
        let closes = closes || inputClosed
        var head = head.completed(bodyBytes: body.readableBytes)
        if closes { head.headerFields[.connection] = "close" }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if body.readableBytes > 0, method != .head {
            context.write(wrapOutboundOut(.body(body)), promise: nil)
        }
        if closes {
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
            return
        }
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
        if flushing.wrote() { context.flush() }
    }
}
