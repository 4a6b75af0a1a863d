import Foundation

/// CPU-time clocks, in nanoseconds.
public enum CPUClock {
    /// CPU time of the calling thread.
    public static func thread() -> UInt64 { read(CLOCK_THREAD_CPUTIME_ID) }

    /// CPU time of the whole process (all threads).
    public static func process() -> UInt64 { read(CLOCK_PROCESS_CPUTIME_ID) }

    static func read(_ clock: clockid_t) -> UInt64 {
        var ts = timespec()
        guard clock_gettime(clock, &ts) == 0 else { return 0 }
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
