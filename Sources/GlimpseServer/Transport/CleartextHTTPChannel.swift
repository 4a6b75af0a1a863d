import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOHTTP2
import NIOTLS

/// One plaintext port that serves HTTP/2 with prior knowledge (h2c) and HTTP/1.1 side by side.
/// The first bytes of each connection decide (see `PriorKnowledgeSniffer`).
struct CleartextHTTPChannel: HTTPChannelHandler {
    typealias Negotiated = NIONegotiatedHTTPVersion<HTTP1Channel.Value, HTTP2Channel.Value>

    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    let http1: HTTP1Channel
    let http2: HTTP2Channel
    var responder: Responder { http1.responder }

    init(responder: @escaping HTTPChannelHandler.Responder, http1: HTTP1Channel.Configuration, http2: HTTP2Channel.Configuration) {
        self.http1 = HTTP1Channel(responder: responder, configuration: http1)
        self.http2 = HTTP2Channel(responder: responder, configuration: http2)
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let negotiation = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { result, channel in
                switch result {
                case .negotiated("h2"):
                    return self.http2.setup(channel: channel, logger: logger).flatMapThrowing { value in
                        let sync = channel.pipeline.syncOperations
                        let http2Handler = try sync.handler(type: NIOHTTP2Handler.self)
                        try sync.addHandler(FlushBeforeClose(), position: .after(http2Handler))
                        return .http2(value)
                    }
                default:
                    return self.http1.setup(channel: channel, logger: logger).map { .http1_1($0) }
                }
            }
            try channel.pipeline.syncOperations.addHandler(PriorKnowledgeSniffer())
            try channel.pipeline.syncOperations.addHandler(negotiation)
            return Value(negotiated: negotiation.protocolNegotiationResult, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http1_1(let connection):
                await http1.handle(value: connection, logger: logger)
            case .http2(let connection):
                await http2.handle(value: connection, logger: logger)
            }
        } catch {
            logger.debug("connection closed before its protocol was known: \(error)")
        }
    }
}

extension HTTPServerBuilder {
    /// h2c with prior knowledge and HTTP/1.1 on the same plaintext port.
    static func cleartextHTTP1AndHTTP2(http1: HTTP1Channel.Configuration = .init(), http2: HTTP2Channel.Configuration = .init()) -> HTTPServerBuilder {
        .init { responder in
            CleartextHTTPChannel(responder: responder, http1: http1, http2: http2)
        }
    }
}
