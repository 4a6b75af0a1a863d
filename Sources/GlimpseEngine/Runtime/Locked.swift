#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex: the engine's caches (plans per batch size, split timings, packed
/// Winograd weights). Used instead of the standard library's `Mutex`, whose lock ThreadSanitizer does
/// not see on Linux (its reports on the plan cache came from accesses made under that lock), while it
/// intercepts pthread mutexes; one lock and unlock per run costs nothing next to a run.
public final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init(_ value: Value) {
        self.value = value
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always)
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
