import NIOCore
import NIOHTTP2

/// What a transport does when its connection's life calls for it: write the drain's frames, close.
protocol HTTP2ConnectionLifeOwner: AnyObject {
    /// Write GOAWAY with the largest stream id and PING `ping`, and send them.
    func beginDrain(ping: HTTP2PingData)
    /// Write GOAWAY naming `lastStreamID`, and send it.
    func sendFinalGoAway(lastStreamID: HTTP2StreamID)
    /// Close once what is queued has been written (on the next tick: the stream-closed event may
    /// arrive while a stream's last frame is still being written).
    func closeAfterPendingWrites()
}

/// One HTTP/2 connection's life, the same for both transports (`HTTP2ConnectionManager` over
/// NIOHTTP2, `NGHTTP2Responder` over libnghttp2): feeds `HTTP2ConnectionStateMachine` the
/// connection's events and timers, and carries out the actions it returns through its owner.
/// Used on the connection's event loop only.
final class HTTP2ConnectionLife {
    private var state = HTTP2ConnectionStateMachine()
    private var idleTimer: Scheduled<Void>?
    private var graceTimer: Scheduled<Void>?
    private var pingTimer: Scheduled<Void>?
    private let idleTimeout: TimeAmount?
    private let gracefulCloseTimeout: TimeAmount
    private let eventLoop: any EventLoop
    weak var owner: (any HTTP2ConnectionLifeOwner)?

    init(eventLoop: any EventLoop, idleTimeout: TimeAmount?, gracefulCloseTimeout: TimeAmount) {
        self.eventLoop = eventLoop
        self.idleTimeout = idleTimeout
        self.gracefulCloseTimeout = gracefulCloseTimeout
    }

    /// The connection is up: the idle timer runs until the first stream.
    func start(owner: any HTTP2ConnectionLifeOwner) {
        self.owner = owner
        armIdleTimer()
    }

    /// The connection is gone: no timer fires any more.
    func stop() {
        idleTimer?.cancel()
        graceTimer?.cancel()
        pingTimer?.cancel()
        owner = nil
    }

    /// The channel events that concern the connection's life: the server is stopping
    /// (`ChannelShouldQuiesceEvent`), or the client half-closed its side.
    func channelEvent(_ event: Any) {
        switch event {
        case is ChannelShouldQuiesceEvent: perform(state.quiesce(ping: Self.newPing()))
        case let e as ChannelEvent where e == .inputClosed: perform(state.inputClosed())
        default: break
        }
    }

    func streamCreated(_ id: HTTP2StreamID) { perform(state.streamCreated(id)) }
    func streamClosed(_ id: HTTP2StreamID) { perform(state.streamClosed(id)) }
    func pingAcknowledged(_ ping: HTTP2PingData) { perform(state.pingAcknowledged(ping)) }
    /// A connection error, or the grace period is over.
    func close() { perform(state.close()) }

    private static func newPing() -> HTTP2PingData { HTTP2PingData(withInteger: .random(in: .min ... .max)) }

    private func perform(_ action: HTTP2ConnectionStateMachine.Action) {
        guard let owner else { return }
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
            owner.beginDrain(ping: ping)
            // A client that does not acknowledge the PING within a few seconds gets its final GOAWAY
            // anyway; the grace timer bounds the rest.
            let bound = NIOLoopBound(self, eventLoop: eventLoop)
            pingTimer = eventLoop.scheduleTask(in: min(.seconds(5), gracefulCloseTimeout)) {
                bound.value.perform(bound.value.state.pingTimerFired())
            }
            graceTimer = eventLoop.scheduleTask(in: gracefulCloseTimeout) {
                bound.value.perform(bound.value.state.close())
            }
        case .sendFinalGoAway(let lastStreamID, let close):
            pingTimer?.cancel()
            owner.sendFinalGoAway(lastStreamID: lastStreamID)
            if close { closeAfterPendingWrites(owner) }
        case .close:
            closeAfterPendingWrites(owner)
        }
    }

    private func closeAfterPendingWrites(_ owner: any HTTP2ConnectionLifeOwner) {
        idleTimer?.cancel()
        owner.closeAfterPendingWrites()
    }

    private func armIdleTimer() {
        guard let idleTimeout else { return }
        idleTimer?.cancel()
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        idleTimer = eventLoop.scheduleTask(in: idleTimeout) {
            bound.value.perform(bound.value.state.idleTimerFired(ping: Self.newPing()))
        }
    }
}
