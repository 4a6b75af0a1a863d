import NIOCore
import NIOHTTP2

/// Owns an HTTP/2 connection's life: closes it when idle, and drains it gracefully. The rules are
/// `HTTP2ConnectionStateMachine`'s; this handler feeds it channel events and timers and carries out
/// the actions it returns.
///
/// The close is always deferred to the next event-loop tick: the stream-closed event arrives while
/// `NIOHTTP2Handler` is still writing the stream's last frame, and closing at once would drop it.
final class HTTP2ConnectionManager: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private var state = HTTP2ConnectionStateMachine()
    private var context: ChannelHandlerContext?
    private var idleTimer: Scheduled<Void>?
    private var graceTimer: Scheduled<Void>?
    private var pingTimer: Scheduled<Void>?
    private let idleTimeout: TimeAmount?
    private let gracefulCloseTimeout: TimeAmount
    private let eventLoop: any EventLoop
    /// Whether streams are counted from the protocol handler's events (no stream multiplexer, so no
    /// `streamDelegate`).
    private let countsStreamEvents: Bool

    init(eventLoop: any EventLoop, idleTimeout: TimeAmount?, gracefulCloseTimeout: TimeAmount, countsStreamEvents: Bool = false) {
        self.eventLoop = eventLoop
        self.countsStreamEvents = countsStreamEvents
        self.idleTimeout = idleTimeout
        self.gracefulCloseTimeout = gracefulCloseTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        armIdleTimer()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        graceTimer?.cancel()
        pingTimer?.cancel()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .ping(let ping, ack: true) = unwrapInboundIn(data).payload {
            perform(state.pingAcknowledged(ping))
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
            streamClosed(e.streamID)
            return
        }
        if countsStreamEvents, kind == Self.streamCreated, let e = event as? NIOHTTP2StreamCreatedEvent {
            streamCreated(e.streamID)
            context.fireUserInboundEventTriggered(event)
            return
        }
        switch event {
        case is ChannelShouldQuiesceEvent:
            perform(state.quiesce(ping: Self.newPing()))
        case let e as ChannelEvent where e == .inputClosed:
            perform(state.inputClosed())
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Connection-level protocol errors have already been answered with GOAWAY by NIOHTTP2Handler.
        perform(state.close())
    }

    private static let windowUpdated = ObjectIdentifier(NIOHTTP2WindowUpdatedEvent.self)
    private static let streamClosed = ObjectIdentifier(StreamClosedEvent.self)
    private static let streamCreated = ObjectIdentifier(NIOHTTP2StreamCreatedEvent.self)

    private static func newPing() -> HTTP2PingData { HTTP2PingData(withInteger: .random(in: .min ... .max)) }

    // MARK: actions

    private func perform(_ action: HTTP2ConnectionStateMachine.Action) {
        guard let context else { return }
        switch action {
        case .none:
            break
        case .armIdleTimer:
            armIdleTimer()
        case .cancelIdleTimer:
            idleTimer?.cancel()
            idleTimer = nil
        case .beginDrain(let ping):
            idleTimer?.cancel()
            context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil))), promise: nil)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .ping(ping, ack: false))), promise: nil)
            context.flush()
            // A client that does not acknowledge the PING within a few seconds gets its final GOAWAY
            // anyway; the grace timer bounds the rest.
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            pingTimer = context.eventLoop.scheduleTask(in: min(.seconds(5), gracefulCloseTimeout)) {
                bound.value.perform(bound.value.state.pingTimerFired())
            }
            graceTimer = context.eventLoop.scheduleTask(in: gracefulCloseTimeout) {
                bound.value.perform(bound.value.state.close())
            }
        case .sendFinalGoAway(let lastStreamID, let close):
            pingTimer?.cancel()
            context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: nil))), promise: nil)
            context.flush()
            if close { closeOnNextTick(context) }
        case .close:
            closeOnNextTick(context)
        }
    }

    private func armIdleTimer() {
        guard let idleTimeout, let context else { return }
        idleTimer?.cancel()
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        idleTimer = context.eventLoop.scheduleTask(in: idleTimeout) {
            bound.value.perform(bound.value.state.idleTimerFired(ping: Self.newPing()))
        }
    }

    private func closeOnNextTick(_ context: ChannelHandlerContext) {
        idleTimer?.cancel()
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            bound.value.flush()
            bound.value.close(promise: nil)
        }
    }

    // MARK: streams

    fileprivate func streamCreated(_ id: HTTP2StreamID) { perform(state.streamCreated(id)) }

    fileprivate func streamClosed(_ id: HTTP2StreamID) { perform(state.streamClosed(id)) }

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
