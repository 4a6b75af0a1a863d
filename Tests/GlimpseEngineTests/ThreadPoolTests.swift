import Foundation
import GlimpseEngine
import Synchronization
import XCTest

/// `ThreadPool.parallelTasks`: every task runs once, on a thread index below `threads`, and no
/// two tasks run on one thread index at the same time (per-thread scratch depends on it).
final class ThreadPoolTests: XCTestCase {
    func testEveryTaskRunsOnceAndThreadIndicesAreExclusive() {
        for threads in [1, 2, 3] {
            let pool = ThreadPool(threads: threads)
            for count in [1, 2, 5, 17, 64] {
                let runs = (0..<count).map { _ in Counter() }
                let inUse = (0..<threads).map { _ in Counter() }
                let overlaps = Atomic<Int>(0), outOfRange = Atomic<Int>(0)
                pool.parallelTasks(count) { task, thread in
                    guard thread >= 0 && thread < threads else {
                        outOfRange.add(1, ordering: .relaxed)
                        return
                    }
                    if inUse[thread].value.add(1, ordering: .sequentiallyConsistent).newValue != 1 { overlaps.add(1, ordering: .relaxed) }
                    runs[task].value.add(1, ordering: .relaxed)
                    // Long enough for the other threads to join and take tasks of their own.
                    var x = 0.0
                    for i in 0..<20_000 { x += sin(Double(i)) }
                    if x.isNaN { print(x) }
                    inUse[thread].value.subtract(1, ordering: .sequentiallyConsistent)
                }
                XCTAssertEqual(runs.map { $0.value.load(ordering: .relaxed) }, [Int](repeating: 1, count: count),
                               "threads \(threads), count \(count)")
                XCTAssertEqual(overlaps.load(ordering: .relaxed), 0, "threads \(threads), count \(count)")
                XCTAssertEqual(outOfRange.load(ordering: .relaxed), 0, "threads \(threads), count \(count)")
            }
        }
    }
}

private final class Counter: Sendable {
    let value = Atomic<Int>(0)
}
