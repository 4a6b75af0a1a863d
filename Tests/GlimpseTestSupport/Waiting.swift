import Foundation

/// A bounded wait that ran out: its description names what was awaited and for how long, so a hang
/// fails the test with a reason instead of stalling the run.
public struct WaitTimeout: Error, CustomStringConvertible {
    public let description: String
    public init(_ what: String, seconds: Double) {
        description = "timed out after \(seconds) s waiting for \(what)"
    }
}

/// Polls `condition` every `poll` seconds until it holds; throws `WaitTimeout` naming `what` once
/// `timeout` seconds (scaled by `GLIMPSE_TEST_TIME_SCALE`) have passed without it.
public func waitUntil(_ what: String, timeout: Double, poll: Double = 0.001, _ condition: () throws -> Bool) throws {
    let limit = TestTime.seconds(timeout)
    let deadline = Date().addingTimeInterval(limit)
    while try !condition() {
        guard Date() < deadline else { throw WaitTimeout(what, seconds: limit) }
        Thread.sleep(forTimeInterval: poll)
    }
}

/// The same from async code: it sleeps the task, not the thread, so the tasks that make `condition`
/// true can run on the cooperative pool meanwhile (a pool as narrow as the machine's cores).
public func waitUntil(_ what: String, timeout: Double, poll: Double = 0.001, _ condition: () throws -> Bool) async throws {
    let limit = TestTime.seconds(timeout)
    let deadline = Date().addingTimeInterval(limit)
    while try !condition() {
        guard Date() < deadline else { throw WaitTimeout(what, seconds: limit) }
        try await Task.sleep(nanoseconds: UInt64(poll * 1e9))
    }
}

extension DispatchSemaphore {
    /// `wait()` with a deadline: throws `WaitTimeout` naming `what` when no signal came within
    /// `timeout` seconds (scaled by `GLIMPSE_TEST_TIME_SCALE`).
    public func wait(for what: String, timeout: Double) throws {
        let limit = TestTime.seconds(timeout)
        if wait(timeout: .now() + limit) == .timedOut { throw WaitTimeout(what, seconds: limit) }
    }
}
