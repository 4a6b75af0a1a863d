import GlimpseTensor

/// Deterministic pseudo-random numbers for tests: the same seed gives the same inputs on every
/// machine, so a failure can be replayed.
public struct TestRandom: RandomNumberGenerator, Sendable {
    private var generator: SplitMix64

    public init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    public mutating func next() -> UInt64 { generator.next() }

    /// A float in [-1, 1).
    public mutating func float() -> Float { Float(next() >> 40) / Float(1 << 24) * 2 - 1 }
    public mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(next() % UInt64(range.count)) }
    public mutating func floats(_ n: Int) -> [Float] { (0..<n).map { _ in float() } }
}
