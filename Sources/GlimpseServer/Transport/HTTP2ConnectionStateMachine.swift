import NIOHTTP2

/// The phases of one HTTP/2 connection's life, as a pure state machine: each event returns the action
/// the channel handler (`HTTP2ConnectionManager`) carries out. No channel, no timers, no clock, so
/// the drain and idle rules are tested without sockets.
///
/// Drain (RFC 9113 §6.8): a GOAWAY with the largest stream id and a PING; once the PING is
/// acknowledged (or its timer fires), a second GOAWAY naming the last stream accepted; the connection
/// closes when the last stream ends, or when the grace timer fires.
struct HTTP2ConnectionStateMachine {
    enum Phase: Equatable {
        case active
        case goingAway(HTTP2PingData)
        case finalGoAwaySent
        case closing
    }

    enum Action: Equatable {
        case none
        /// No stream is open: start the idle timer again.
        case armIdleTimer
        /// The first stream opened after an idle spell: stop the idle timer.
        case cancelIdleTimer
        /// Stop the idle timer; write GOAWAY(max id) and PING `ping`; start the PING and grace timers.
        case beginDrain(ping: HTTP2PingData)
        /// Stop the PING timer; write GOAWAY(`lastStreamID`); then close when `close` is true.
        case sendFinalGoAway(lastStreamID: HTTP2StreamID, close: Bool)
        /// Stop the idle timer and close on the next event-loop tick (after the last frame is written).
        case close
    }

    private(set) var phase = Phase.active
    private(set) var openStreams = Set<HTTP2StreamID>()
    private(set) var lastStreamID = HTTP2StreamID.rootStream
    private var halfClosed = false

    /// The server is stopping (`ChannelShouldQuiesceEvent`).
    mutating func quiesce(ping: HTTP2PingData) -> Action {
        guard case .active = phase else { return .none }
        phase = .goingAway(ping)
        return .beginDrain(ping: ping)
    }

    /// The idle timer fired: drain when still idle.
    mutating func idleTimerFired(ping: HTTP2PingData) -> Action {
        openStreams.isEmpty ? quiesce(ping: ping) : .none
    }

    mutating func pingAcknowledged(_ ping: HTTP2PingData) -> Action {
        guard case .goingAway(let expected) = phase, ping == expected else { return .none }
        return finalGoAway()
    }

    /// The client did not acknowledge the PING in time: it gets its final GOAWAY anyway.
    mutating func pingTimerFired() -> Action {
        guard case .goingAway = phase else { return .none }
        return finalGoAway()
    }

    private mutating func finalGoAway() -> Action {
        let close = openStreams.isEmpty
        phase = close ? .closing : .finalGoAwaySent
        return .sendFinalGoAway(lastStreamID: lastStreamID, close: close)
    }

    /// The client half-closed its side; the answers to its open streams still go out.
    mutating func inputClosed() -> Action {
        halfClosed = true
        return openStreams.isEmpty ? close() : .none
    }

    /// A connection-level error (already answered with GOAWAY by `NIOHTTP2Handler`) or the grace timer.
    mutating func close() -> Action {
        if case .closing = phase { return .none }
        phase = .closing
        return .close
    }

    mutating func streamCreated(_ id: HTTP2StreamID) -> Action {
        let wasIdle = openStreams.isEmpty
        openStreams.insert(id)
        lastStreamID = max(lastStreamID, id)
        // The idle timer runs only while no stream is open, so only the first stream stops it.
        return wasIdle ? .cancelIdleTimer : .none
    }

    mutating func streamClosed(_ id: HTTP2StreamID) -> Action {
        openStreams.remove(id)
        guard openStreams.isEmpty else { return .none }
        switch phase {
        case .finalGoAwaySent: return close()
        case .active: return halfClosed ? close() : .armIdleTimer
        case .goingAway, .closing: return .none
        }
    }
}
