import Foundation

/// How much longer than usual the tests that wait on a server may wait: `GLIMPSE_TEST_TIME_SCALE`
/// (1 unless set; `scripts/sanitize.sh` sets it, since instrumented engines run several times slower).
public enum TestTime {
    public static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["GLIMPSE_TEST_TIME_SCALE"], let value = Double(text),
              value >= 1, value <= 100 else { return 1 }
        return value
    }()

    /// `seconds` scaled.
    public static func seconds(_ seconds: Double) -> Double { seconds * scale }
}
