@testable import GlimpseLoad
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The loop's wait reports readable sockets and wake-ups the same way with epoll and with select.
final class LoopWaiterTests: XCTestCase {
    func testReportsReadinessWithEpollAndSelect() throws {
        for useEpoll in [true, false] {
            var a: [Int32] = [0, 0], b: [Int32] = [0, 0]
            XCTAssertEqual(pipe(&a), 0)
            XCTAssertEqual(pipe(&b), 0)
            defer { for fd in a + b { close(fd) } }
            let waiter = LoopWaiter([LoopWaiter.Item(socket: a[0], wake: b[0])], useEpoll: useEpoll)
            XCTAssertNil(waiter.wait(timeoutNs: 1_000_000))
            XCTAssertFalse(waiter.items[0].readable || waiter.items[0].woken, "useEpoll \(useEpoll)")
            var one: UInt8 = 1
            XCTAssertEqual(write(a[1], &one, 1), 1)
            let start = MonotonicClock.now()
            XCTAssertNil(waiter.wait(timeoutNs: 1_000_000_000))
            XCTAssertLessThan(MonotonicClock.now() - start, 500_000_000)
            XCTAssertTrue(waiter.items[0].readable, "useEpoll \(useEpoll)")
            XCTAssertFalse(waiter.items[0].woken, "useEpoll \(useEpoll)")
            XCTAssertEqual(write(b[1], &one, 1), 1)
            XCTAssertNil(waiter.wait(timeoutNs: 1_000_000_000))
            XCTAssertTrue(waiter.items[0].woken, "useEpoll \(useEpoll)")
            // A deactivated item is not waited for.
            waiter.deactivate(0)
            let quiet = MonotonicClock.now()
            XCTAssertNil(waiter.wait(timeoutNs: 20_000_000))
            XCTAssertFalse(waiter.items[0].readable)
            XCTAssertGreaterThanOrEqual(MonotonicClock.now() - quiet, 15_000_000)
        }
    }
}
