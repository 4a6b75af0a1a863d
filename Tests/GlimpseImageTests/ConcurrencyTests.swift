import Dispatch
import GlimpseTestSupport
import XCTest
@testable import GlimpseImage

/// The pipeline holds no shared mutable state: concurrent calls give the same bytes as serial ones.
final class ConcurrencyTests: XCTestCase {
    func testConcurrentPreprocessingIsDeterministic() throws {
        let names = ["imagenet/car.jpg", "formats/pillow_hopper_orientation_6.jpg", "formats/pillow_transparent.png",
                     "imagenet/kimono.jpg"]
        let inputs = try names.map { try SharedData.data("images/\($0)") }
        let expected = try inputs.map { try preprocess($0).values }
        let results = UnsafeMutableBufferPointer<[Float]?>.allocate(capacity: 16)
        results.initialize(repeating: nil)
        defer { results.deallocate() }
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            results[i] = try? preprocess(inputs[i % inputs.count]).values
        }
        for i in 0..<16 { XCTAssertEqual(results[i], expected[i % inputs.count], "call \(i)") }
    }
}
