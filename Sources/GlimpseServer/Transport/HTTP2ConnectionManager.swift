import NIOCore
import NIOHTTP2

/// Owns an HTTP/2 connection's life: closes it when idle, and drains it gracefully.
///
/// Drain (on `ChannelShouldQuiesceEvent`, sent to every connection when the server stops) follows
/// RFC 9113 §6.8: a GOAWAY with the largest stream id and a PING, then, once the PING is acknowledged
/// (so every stream the client opened before seeing the GOAWAY has arrived), a second GOAWAY naming the
/// last stream accepted. Streams up to that id are answered; the connection closes when the last one
/// ends, or after the graceful-close timeout. A client that half-closes its side still gets the answers
/// to the streams it opened.
///
/// The close is always deferred to the next event-loop tick: the stream-closed event arrives while
/// `NIOHTTP2Handler` is still writing the stream's last frame, and closing at once would drop it.
final class HTTP2ConnectionManager: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private enum Phase {
        case active
        case goingAway(HTTP2PingData)
        case finalGoAwaySent
        case closing
    }

    private var phase = Phase.active
    private var openStreams = Set<HTTP2StreamID>()
    private var lastStreamID = HTTP2StreamID.rootStream
    private var inputClosed = false
    private var context: ChannelHandlerContext?
    private var idleTimer: Scheduled<Void>?
    private var graceTimer: Scheduled<Void>?
    private var pingTimer: Scheduled<Void>?
    private let idleTimeout: TimeAmount?
    private let gracefulCloseTimeout: TimeAmount
    private let eventLoop: any EventLoop

    init(eventLoop: any EventLoop, idleTimeout: TimeAmount?, gracefulCloseTimeout: TimeAmount) {
        self.eventLoop = eventLoop
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
        let frame = unwrapInboundIn(data)
        if case .ping(let ping, ack: true) = frame.payload, case .goingAway(let expected) = phase, ping == expected {
            sendFinalGoAway(context: context)
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ChannelShouldQuiesceEvent:
            beginDrain(context: context)
        case let e as ChannelEvent where e == .inputClosed:
            inputClosed = true
            if openStreams.isEmpty { closeSoon() }
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Connection-level protocol errors have already been answered with GOAWAY by NIOHTTP2Handler.
        closeSoon()
    }

    // MARK: drain

    private func beginDrain(context: ChannelHandlerContext) {
        guard case .active = phase else { return }
        idleTimer?.cancel()
        let ping = HTTP2PingData(withInteger: .random(in: .min ... .max))
        phase = .goingAway(ping)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil))), promise: nil)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .ping(ping, ack: false))), promise: nil)
        context.flush()
        // A client that does not acknowledge the PING within a few seconds gets its final GOAWAY anyway
        // (and the connection closes then if it has no open stream); the grace timer bounds the rest.
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        pingTimer = context.eventLoop.scheduleTask(in: min(.seconds(5), gracefulCloseTimeout)) {
            let manager = bound.value
            if case .goingAway = manager.phase, let context = manager.context { manager.sendFinalGoAway(context: context) }
        }
        scheduleGraceTimer(context: context)
    }

    private func sendFinalGoAway(context: ChannelHandlerContext) {
        pingTimer?.cancel()
        phase = .finalGoAwaySent
        context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: nil))), promise: nil)
        context.flush()
        if openStreams.isEmpty { closeSoon() }
    }

    private func scheduleGraceTimer(context: ChannelHandlerContext) {
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        graceTimer = context.eventLoop.scheduleTask(in: gracefulCloseTimeout) { bound.value.closeSoon() }
    }

    private func armIdleTimer() {
        guard let idleTimeout, let context else { return }
        idleTimer?.cancel()
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        idleTimer = context.eventLoop.scheduleTask(in: idleTimeout) {
            let manager = bound.value
            if let context = manager.context, manager.openStreams.isEmpty { manager.beginDrain(context: context) }
        }
    }

    private func closeSoon() {
        guard let context else { return }
        if case .closing = phase { return }
        phase = .closing
        idleTimer?.cancel()
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            bound.value.flush()
            bound.value.close(promise: nil)
        }
    }

    // MARK: streams

    fileprivate func streamCreated(_ id: HTTP2StreamID) {
        openStreams.insert(id)
        lastStreamID = max(lastStreamID, id)
        idleTimer?.cancel()
    }

    fileprivate func streamClosed(_ id: HTTP2StreamID) {
        openStreams.remove(id)
        guard openStreams.isEmpty else { return }
        switch phase {
        case .finalGoAwaySent: closeSoon()
        case .active: if inputClosed { closeSoon() } else { armIdleTimer() }
        case .goingAway, .closing: break
        }
    }

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
