#if canImport(Glibc)
import Glibc
#endif

/// Names the calling thread for `top -H`, `perf` and `/proc/PID/task/*/comm`. On Linux a new thread
/// inherits its creator's name (often a Swift concurrency thread's), and Foundation's `Thread.name`
/// set before `start()` does not reach the kernel. Linux keeps 15 bytes; longer names are cut.
/// (Written to /proc/thread-self/comm: Swift's Glibc module does not declare `pthread_setname_np`.)
public func nameCurrentThread(_ name: String) {
    #if canImport(Glibc)
    let fd = open("/proc/thread-self/comm", O_WRONLY)
    guard fd >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    #endif
}
