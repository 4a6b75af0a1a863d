import Foundation
import GlimpseRPC
import NIOCore
import NIOPosix
import XCTest

@testable import GlimpseServer

/// Small `/rpc` calls run their task on the connection's event loop (`EventLoopTaskExecutor`); any
/// call but a plain `classify` leaves it (`RPCDispatcher.handle`).
final class EventLoopTaskExecutorTests: XCTestCase {
    /// A task preferring the executor starts on the loop, and comes back to it after a
    /// continuation is resumed from another thread (as a batch worker resumes a request).
    func testTasksRunOnTheLoopAndResumeThere() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let seen = await Task(executorPreference: EventLoopTaskExecutor(loop)) { () -> [Bool] in
            var seen = [loop.inEventLoop]
            await withCheckedContinuation { (resume: CheckedContinuation<Void, Never>) in
                Thread { resume.resume() }.start()
            }
            seen.append(loop.inEventLoop)
            return seen
        }.value
        XCTAssertEqual(seen, [true, true])
        try await group.shutdownGracefully()
    }

    /// Calls other than a plain `classify` (here a method of the table, and the same call in a
    /// batch array) run on the global pool even when the caller prefers the event loop.
    func testOtherCallsLeaveTheLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let dispatcher = RPCDispatcher(methods: ["where": { _, _ in .bool(MultiThreadedEventLoopGroup.currentEventLoop != nil) }])
        for body in [#"{"jsonrpc":"2.0","id":1,"method":"where"}"#, #"[{"jsonrpc":"2.0","id":1,"method":"where"}]"#] {
            let (reply, onLoop) = await Task(executorPreference: EventLoopTaskExecutor(loop)) {
                let started = loop.inEventLoop
                return (await dispatcher.handle(body: Array(body.utf8)), started)
            }.value
            XCTAssertTrue(onLoop, "the task started on the loop")
            let text = String(decoding: reply.body, as: UTF8.self)
            XCTAssertTrue(text.contains(#""result":false"#), "the method ran on the loop: \(text)")
        }
        try await group.shutdownGracefully()
    }
}
