import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOHTTPTypesHTTP2
import NIOSSL
import NIOTLS

/// Glimpse's connection setup: HTTP/2 and HTTP/1.1 on one port, either in clear text (h2c with prior
/// knowledge, told apart by `PriorKnowledgeSniffer`) or over TLS (ALPN `h2` / `http/1.1`).
///
/// HTTP/2 runs on our own pipeline rather than Hummingbird's `HTTP2Channel` so that the SETTINGS we
/// advertise (`HTTP2Options`) and the drain behaviour (`HTTP2ConnectionManager`) are ours to choose.
/// `HTTP2FrameResponder` answers each connection's requests from its frames, with the same router as
/// HTTP/1.1 (or, with `HTTP2Options.transport` `.nghttp2`, `NGHTTP2Responder` serves the connection's
/// bytes with libnghttp2); with `HTTP2Options.streamChannels`, each stream gets a child channel and a task instead,
/// answered by Hummingbird's HTTP handling. `HTTP1Responder` likewise answers HTTP/1.1 requests in the
/// connection's pipeline; with `http1ConnectionTasks`, Hummingbird's `HTTP1Channel` reads each
/// connection in a task instead.
struct GlimpseHTTPChannel: HTTPChannelHandler {
    typealias Streams = NIOHTTP2Handler.AsyncStreamMultiplexer<NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>>
    typealias Negotiated = NIONegotiatedHTTPVersion<HTTP1Connection, HTTP2Connection>

    enum HTTP1Connection: Sendable {
        /// Hummingbird's task per connection (`http1ConnectionTasks`).
        case tasks(HTTP1Channel.Value)
        /// `HTTP1Responder` answers in the connection's pipeline.
        case responder(any Channel)
    }

    enum HTTP2Connection: Sendable {
        /// One child channel per stream (`HTTP2Options.streamChannels`).
        case streams(Streams)
        /// `HTTP2FrameResponder` answers on the connection's channel.
        case frames(any Channel)
    }

    /// What `HTTP2FrameResponder` needs besides the options.
    struct FrameServing: Sendable {
        let responder: RouterResponder<BasicRequestContext>
        let inline: InlineRoutes
        /// `POST /rpc`, answered without the router.
        let rpc: RPCRoute
        let maxBody: Int
        let logger: Logger
    }

    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    let http1: HTTP1Channel
    let http2: HTTP2Options
    let tls: NIOSSLContext?
    let timeouts: ConnectionTimeouts
    let frames: FrameServing
    let http1ConnectionTasks: Bool
    var responder: Responder { http1.responder }

    init(responder: @escaping Responder, http2: HTTP2Options, tls: NIOSSLContext?, timeouts: ConnectionTimeouts, frames: FrameServing,
         http1ConnectionTasks: Bool = false) {
        let headTimeout = timeouts.header
        self.http1 = HTTP1Channel(responder: responder, configuration: .init(
            additionalChannelHandlers: [RequestHeadTimeout(timeout: headTimeout)],
            idleTimeout: timeouts.idle))
        self.http2 = http2
        self.tls = tls
        self.timeouts = timeouts
        self.frames = frames
        self.http1ConnectionTasks = http1ConnectionTasks
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let sync = channel.pipeline.syncOperations
            // The protocol must be known (TLS handshake done, or h2c preface seen) within the header timeout.
            let handshakeTimeout = HandshakeTimeout(timeout: timeouts.header)
            try sync.addHandler(handshakeTimeout)
            if let tls {
                try sync.addHandler(NIOSSLServerHandler(context: tls))
            } else {
                try sync.addHandler(PriorKnowledgeSniffer())
            }
            let negotiation = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { result, channel in
                channel.pipeline.syncOperations.removeHandler(handshakeTimeout, promise: nil)
                switch result {
                case .negotiated("h2"):
                    return self.setupHTTP2(channel: channel).map { .http2($0) }
                case .negotiated("http/1.1"), .fallback:
                    return self.setupHTTP1(channel: channel, logger: logger).map { .http1_1($0) }
                case .negotiated(let other):
                    logger.debug("closing a connection that negotiated \(other)")
                    return channel.close().flatMapThrowing { throw NIOHTTP2Errors.invalidALPNToken() }
                }
            }
            try sync.addHandler(negotiation)
            return Value(negotiated: negotiation.protocolNegotiationResult, channel: channel)
        }
    }

    private func setupHTTP1(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1Connection> {
        guard !http1ConnectionTasks else { return http1.setup(channel: channel, logger: logger).map { .tasks($0) } }
        return channel.eventLoop.makeCompletedFuture {
            let sync = channel.pipeline.syncOperations
            // The decoder's limits are those of the task path's configuration.
            let decoder = http1.configuration.httpDecoder
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = decoder.maxHeaderFieldSize
            limits.maxHeaderListSize = decoder.maxHeaderListSize
            limits.maxHeaderFieldCount = decoder.maxHeaderFieldCount
            try sync.configureHTTPServerPipeline(withPipeliningAssistance: true, withErrorHandling: true,
                                                 withOutboundHeaderValidation: false, withEncoderConfiguration: .init(),
                                                 withDecoderLimitConfiguration: limits)
            try sync.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try sync.addHandler(RequestHeadTimeout(timeout: timeouts.header))
            try sync.addHandler(HTTPConnectionStateHandler(idleTimeout: .nanoseconds(timeouts.idle.nanoseconds), logger: logger))
            try sync.addHandler(HTTP1Responder(serving: frames))
            return .responder(channel)
        }
    }

    private func setupHTTP2(channel: any Channel) -> EventLoopFuture<HTTP2Connection> {
        channel.eventLoop.makeCompletedFuture {
            let sync = channel.pipeline.syncOperations
            let configuration = http2.handlerConfiguration
            if !http2.streamChannels, http2.transport == .nghttp2 {
                try sync.addHandler(NGHTTP2Responder(serving: frames, http2: http2, timeouts: timeouts, eventLoop: channel.eventLoop))
                return .frames(channel)
            }
            guard http2.streamChannels else {
                let manager = HTTP2ConnectionManager(eventLoop: channel.eventLoop, idleTimeout: timeouts.idle,
                                                     gracefulCloseTimeout: timeouts.gracefulClose, countsStreamEvents: true)
                // `HTTP2RequestAssembler` checks each request's fields and body length itself
                // (`HTTP2RequestFields`), in the pass that builds the request: the handler's own
                // validation walked every block a second time, and the response blocks this server writes.
                var connection = configuration.connection
                connection.headerBlockValidation = .disabled
                connection.contentLengthValidation = .disabled
                try sync.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: connection,
                                                    streamConfiguration: configuration.stream))
                try sync.addHandler(manager)
                try sync.addHandler(HTTP2FrameResponder(serving: frames, http2: http2))
                return .frames(channel)
            }
            let manager = HTTP2ConnectionManager(eventLoop: channel.eventLoop, idleTimeout: timeouts.idle, gracefulCloseTimeout: timeouts.gracefulClose)
            let streams = try sync.configureAsyncHTTP2Pipeline(
                mode: .server, streamDelegate: manager.streamDelegate, configuration: configuration
            ) { stream in
                stream.eventLoop.makeCompletedFuture {
                    try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTPServerCodec())
                    return try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(wrappingChannelSynchronously: stream)
                }
            }
            let http2Handler = try sync.handler(type: NIOHTTP2Handler.self)
            try sync.addHandler(manager, position: .after(http2Handler))
            return .streams(streams)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http1_1(.tasks(let connection)):
                await http1.handle(value: connection, logger: logger)
            case .http1_1(.responder(let channel)):
                try await channel.closeFuture.get()
            case .http2(.frames(let channel)):
                try await channel.closeFuture.get()
            case .http2(.streams(let streams)):
                try await withThrowingDiscardingTaskGroup { group in
                    for try await stream in streams.inbound {
                        group.addTask { await self.handleHTTP(asyncChannel: stream, logger: logger) }
                    }
                }
            }
        } catch {
            logger.debug("connection ended: \(error)")
        }
    }
}

extension HTTPServerBuilder {
    /// Glimpse's HTTP/1.1 + HTTP/2 server, in clear text or over TLS.
    static func glimpse(http2: HTTP2Options, tls: NIOSSLContext?, timeouts: ConnectionTimeouts,
                        frames: GlimpseHTTPChannel.FrameServing, http1ConnectionTasks: Bool) -> HTTPServerBuilder {
        .init { responder in
            GlimpseHTTPChannel(responder: responder, http2: http2, tls: tls, timeouts: timeouts, frames: frames,
                               http1ConnectionTasks: http1ConnectionTasks)
        }
    }
}
