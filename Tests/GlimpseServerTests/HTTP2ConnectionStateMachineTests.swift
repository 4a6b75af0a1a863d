import NIOHTTP2
import XCTest

@testable import GlimpseServer

/// The connection's idle and drain rules, driven event by event without a socket.
final class HTTP2ConnectionStateMachineTests: XCTestCase {
    typealias Machine = HTTP2ConnectionStateMachine
    let ping = HTTP2PingData(withInteger: 42)

    func testIdleTimerRunsOnlyWithoutStreams() {
        var m = Machine()
        XCTAssertEqual(m.streamCreated(1), .cancelIdleTimer)
        XCTAssertEqual(m.streamCreated(3), .none)   // the timer is already stopped
        XCTAssertEqual(m.idleTimerFired(ping: ping), .none, "streams are open")
        XCTAssertEqual(m.streamClosed(1), .none)
        XCTAssertEqual(m.streamClosed(3), .armIdleTimer)
        XCTAssertEqual(m.idleTimerFired(ping: ping), .beginDrain(ping: ping))
        XCTAssertEqual(m.phase, .goingAway(ping))
    }

    func testDrainWaitsForThePingThenNamesTheLastStream() {
        var m = Machine()
        _ = m.streamCreated(1)
        _ = m.streamCreated(5)
        XCTAssertEqual(m.quiesce(ping: ping), .beginDrain(ping: ping))
        XCTAssertEqual(m.quiesce(ping: ping), .none, "a second quiesce changes nothing")
        XCTAssertEqual(m.pingAcknowledged(HTTP2PingData(withInteger: 7)), .none, "not our PING")
        // A stream the client opened before it saw the GOAWAY is still accepted.
        _ = m.streamCreated(7)
        XCTAssertEqual(m.pingAcknowledged(ping), .sendFinalGoAway(lastStreamID: 7, close: false))
        XCTAssertEqual(m.phase, .finalGoAwaySent)
        XCTAssertEqual(m.pingTimerFired(), .none, "the final GOAWAY went out already")
        XCTAssertEqual(m.streamClosed(1), .none)
        XCTAssertEqual(m.streamClosed(5), .none)
        XCTAssertEqual(m.streamClosed(7), .close)
        XCTAssertEqual(m.phase, .closing)
        XCTAssertEqual(m.close(), .none, "the grace timer finds it closing")
    }

    func testUnansweredPingStillEndsTheDrain() {
        var m = Machine()
        XCTAssertEqual(m.quiesce(ping: ping), .beginDrain(ping: ping))
        XCTAssertEqual(m.pingTimerFired(), .sendFinalGoAway(lastStreamID: .rootStream, close: true))
        XCTAssertEqual(m.phase, .closing)
        XCTAssertEqual(m.pingAcknowledged(ping), .none)
    }

    func testHalfClosedClientGetsItsAnswers() {
        var m = Machine()
        _ = m.streamCreated(1)
        XCTAssertEqual(m.inputClosed(), .none, "stream 1 is still answered")
        XCTAssertEqual(m.streamClosed(1), .close)
        var idle = Machine()
        XCTAssertEqual(idle.inputClosed(), .close)
    }

    func testGraceTimerAndErrorsCloseOnce() {
        var m = Machine()
        _ = m.streamCreated(1)
        XCTAssertEqual(m.quiesce(ping: ping), .beginDrain(ping: ping))
        XCTAssertEqual(m.close(), .close)
        XCTAssertEqual(m.close(), .none)
        XCTAssertEqual(m.streamClosed(1), .none)
    }
}
