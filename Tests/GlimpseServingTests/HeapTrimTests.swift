import Foundation
import GlimpseServing
import XCTest

/// `HeapPolicy.trimPeriodically`: memory freed inside the heap (not at its top, so glibc keeps it
/// resident) goes back to the system at the next trim.
final class HeapTrimTests: XCTestCase {
    private func residentMiB() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = text.split(separator: " ").dropFirst().first.flatMap({ Double($0) }) else { return 0 }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }

    func testFreedMiddleOfTheHeapIsReturnedByThePeriodicTrim() throws {
        defer { HeapPolicy.trimPeriodically(every: 0) }
        XCTAssertFalse(HeapPolicy.trimPeriodically(every: 0), "0 stops it")
        // 48 MiB in 16 KiB blocks (under any mmap threshold), touched, then all freed but a block
        // allocated after them, which pins the heap's top so the free pages sit in its middle.
        let blocks = (0..<3072).map { _ -> UnsafeMutableRawPointer? in
            let p = malloc(16 << 10)
            p?.initializeMemory(as: UInt8.self, repeating: 1, count: 16 << 10)
            return p
        }
        let pin = malloc(64)
        defer { free(pin) }
        let full = residentMiB()
        for p in blocks { free(p) }
        XCTAssertGreaterThan(residentMiB(), full - 16, "freed blocks in the middle of the heap stay resident")
        XCTAssertTrue(HeapPolicy.trimPeriodically(every: 0.05))
        let deadline = Date().addingTimeInterval(5)
        while residentMiB() > full - 32, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertLessThan(residentMiB(), full - 32, "the trim gave back most of the 48 MiB (from \(full) MiB)")
    }
}
