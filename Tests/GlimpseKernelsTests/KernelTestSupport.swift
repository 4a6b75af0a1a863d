import GlimpseTensor
import XCTest

/// Deterministic pseudo-random floats in [-1, 1) (SplitMix64).
struct TestRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func float() -> Float { Float(next() >> 40) / Float(1 << 24) * 2 - 1 }
    mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(next() % UInt64(range.count)) }
    mutating func floats(_ n: Int) -> [Float] { (0..<n).map { _ in float() } }
}

/// A 64-byte aligned float buffer for kernel tests.
final class AlignedBuffer {
    let count: Int
    let storage: TensorStorage
    init(_ count: Int) {
        self.count = count
        storage = TensorStorage(byteCount: max(count, 1) * 4)
    }
    convenience init(_ values: [Float]) {
        self.init(values.count)
        for (i, v) in values.enumerated() { pointer[i] = v }
    }
    var pointer: UnsafeMutablePointer<Float> { storage.bytes.assumingMemoryBound(to: Float.self) }
    var array: [Float] { Array(UnsafeBufferPointer(start: pointer, count: count)) }
}

/// Asserts max |a − b| ≤ tolerance · max(1, max |b|).
func assertClose(_ a: [Float], _ b: [Float], tolerance: Float = 1e-5, _ message: String = "",
                 file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a.count, b.count, file: file, line: line)
    var diff: Float = 0, scale: Float = 1
    for i in 0..<min(a.count, b.count) {
        // A NaN on one side only is an infinite difference (max would ignore it).
        if a[i].isNaN != b[i].isNaN { diff = .infinity }
        diff = max(diff, abs(a[i] - b[i]))
        scale = max(scale, abs(b[i]))
    }
    XCTAssertLessThanOrEqual(diff / scale, tolerance, "relative error \(diff / scale) \(message)", file: file, line: line)
}
