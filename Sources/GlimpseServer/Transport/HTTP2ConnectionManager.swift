import NIOCore
import NIOHTTP2

/// Owns an HTTP/2 connection's life over NIOHTTP2: closes it when idle, and drains it gracefully.
/// The rules and timers are `HTTP2ConnectionLife`'s; this handler feeds it the channel's events and
/// writes the frames it calls for.
///
/// The close is always deferred to the next event-loop tick: the stream-closed event arrives while
/// `NIOHTTP2Handler` is still writing the stream's last frame, and closing at once would drop it.
final class HTTP2ConnectionManager: ChannelDuplexHandler, HTTP2ConnectionLifeOwner {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let life: HTTP2ConnectionLife
    private var context: ChannelHandlerContext?
    private let eventLoop: any EventLoop
    /// Whether streams are counted from the protocol handler's events (no stream multiplexer, so no
    /// `streamDelegate`).
    private let countsStreamEvents: Bool

    init(eventLoop: any EventLoop, idleTimeout: TimeAmount?, gracefulCloseTimeout: TimeAmount, countsStreamEvents: Bool = false) {
        self.eventLoop = eventLoop
        self.countsStreamEvents = countsStreamEvents
        life = HTTP2ConnectionLife(eventLoop: eventLoop, idleTimeout: idleTimeout, gracefulCloseTimeout: gracefulCloseTimeout)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        life.start(owner: self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        life.stop()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .ping(let ping, ack: true) = unwrapInboundIn(data).payload {
            life.pingAcknowledged(ping)
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The per-stream events come several times a request, the others once a connection: these
        // are told apart by their type's identity first, which costs less than a failed cast each.
        let kind = ObjectIdentifier(type(of: event))
        if kind == Self.windowUpdated {
            context.fireUserInboundEventTriggered(event)
            return
        }
        if countsStreamEvents, kind == Self.streamClosed, let e = event as? StreamClosedEvent {
            // After the handlers behind this one have seen it: the close may be carried out on the next tick.
            context.fireUserInboundEventTriggered(event)
            life.streamClosed(e.streamID)
            return
        }
        if countsStreamEvents, kind == Self.streamCreated, let e = event as? NIOHTTP2StreamCreatedEvent {
            life.streamCreated(e.streamID)
            context.fireUserInboundEventTriggered(event)
            return
        }
        life.channelEvent(event)
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Connection-level protocol errors have already been answered with GOAWAY by NIOHTTP2Handler.
        life.close()
    }

    private static let windowUpdated = ObjectIdentifier(NIOHTTP2WindowUpdatedEvent.self)
    private static let streamClosed = ObjectIdentifier(StreamClosedEvent.self)
    private static let streamCreated = ObjectIdentifier(NIOHTTP2StreamCreatedEvent.self)

    // MARK: HTTP2ConnectionLifeOwner

    func beginDrain(ping: HTTP2PingData) {
        guard let context else { return }
        context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil))), promise: nil)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .ping(ping, ack: false))), promise: nil)
        context.flush()
    }

    func sendFinalGoAway(lastStreamID: HTTP2StreamID) {
        guard let context else { return }
        context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: nil))), promise: nil)
        context.flush()
    }

    func closeAfterPendingWrites() {
        guard let context else { return }
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            bound.value.flush()
            bound.value.close(promise: nil)
        }
    }

    // MARK: streams

    fileprivate func streamCreated(_ id: HTTP2StreamID) { life.streamCreated(id) }

    fileprivate func streamClosed(_ id: HTTP2StreamID) { life.streamClosed(id) }

    var streamDelegate: StreamDelegate { StreamDelegate(manager: self, eventLoop: eventLoop) }

    struct StreamDelegate: NIOHTTP2StreamDelegate, @unchecked Sendable {
        let manager: HTTP2ConnectionManager
        let eventLoop: any EventLoop

        func streamCreated(_ id: HTTP2StreamID, channel: any Channel) {
            if eventLoop.inEventLoop { manager.streamCreated(id) } else { eventLoop.execute { manager.streamCreated(id) } }
        }

        func streamClosed(_ id: HTTP2StreamID, channel: any Channel) {
            if eventLoop.inEventLoop { manager.streamClosed(id) } else { eventLoop.execute { manager.streamClosed(id) } }
        }
    }
}
