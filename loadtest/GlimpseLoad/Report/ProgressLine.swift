import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A one-line live progress display on stderr, shown only when stderr is a terminal.
public final class ProgressLine {
    public let enabled: Bool
    private var lastCompleted = 0
    private var lastTime = 0.0

    public init(enabled: Bool = isatty(STDERR_FILENO) != 0) { self.enabled = enabled }

    public func update(label: String, elapsed: Double, completed: Int, failed: Int) {
        guard enabled else { return }
        let dt = elapsed - lastTime
        let rate = dt > 0 ? Double(completed - lastCompleted) / dt : 0
        lastCompleted = completed
        lastTime = elapsed
        let text = "\r\u{1B}[2K\(label)  t=\(SummaryTable.fmt(elapsed, 1))s  done=\(completed)  errors=\(failed)  rate=\(SummaryTable.fmt(rate, 0))/s"
        FileHandle.standardError.write(Data(text.utf8))
    }

    public func finish() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
        lastCompleted = 0
        lastTime = 0
    }
}
