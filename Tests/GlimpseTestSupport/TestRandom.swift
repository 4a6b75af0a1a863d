/// Deterministic pseudo-random numbers for tests (SplitMix64): the same seed gives the same inputs on
/// every machine, so a failure can be replayed.
public struct TestRandom: RandomNumberGenerator, Sendable {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A float in [-1, 1).
    public mutating func float() -> Float { Float(next() >> 40) / Float(1 << 24) * 2 - 1 }
    public mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(next() % UInt64(range.count)) }
    public mutating func floats(_ n: Int) -> [Float] { (0..<n).map { _ in float() } }
}
