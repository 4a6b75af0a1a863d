#if canImport(Glibc)
import Glibc
#endif

/// Waits for a connection's socket and wake-up pipe with microsecond timeouts, so open-loop
/// arrivals are sent on time. `select` is used while both descriptors fit an `fd_set` (the Glibc
/// module exposes neither `ppoll` nor `epoll`); past that, `poll` with millisecond timeouts.
enum LoopWait {
    struct Ready {
        var readable = false
        var writable = false
        var woken = false
        var failed: Int32?
    }

    static func wait(socket: Int32, wantWrite: Bool, wake: Int32, timeoutNs: UInt64) -> Ready {
        let setSize = Int32(MemoryLayout<fd_set>.size * 8)
        if socket < setSize && wake < setSize {
            var readSet = fd_set(), writeSet = fd_set()
            add(socket, to: &readSet)
            add(wake, to: &readSet)
            if wantWrite { add(socket, to: &writeSet) }
            var tv = timeval(tv_sec: Int(timeoutNs / 1_000_000_000), tv_usec: Int((timeoutNs % 1_000_000_000 + 999) / 1000))
            let n = select(max(socket, wake) + 1, &readSet, &writeSet, nil, &tv)
            if n < 0 { return Ready(failed: errno == EINTR ? nil : errno) }
            return Ready(readable: contains(socket, readSet), writable: contains(socket, writeSet), woken: contains(wake, readSet))
        }
        var fds = [
            pollfd(fd: socket, events: Int16(POLLIN) | (wantWrite ? Int16(POLLOUT) : 0), revents: 0),
            pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        let n = poll(&fds, 2, Int32((timeoutNs + 999_999) / 1_000_000))
        if n < 0 { return Ready(failed: errno == EINTR ? nil : errno) }
        return Ready(readable: fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0,
                     writable: fds[0].revents & Int16(POLLOUT) != 0, woken: fds[1].revents != 0)
    }

    private static func add(_ fd: Int32, to set: inout fd_set) {
        withUnsafeMutableBytes(of: &set) { raw in
            let words = raw.bindMemory(to: UInt.self)
            words[Int(fd) / UInt.bitWidth] |= 1 << (UInt(fd) % UInt(UInt.bitWidth))
        }
    }

    private static func contains(_ fd: Int32, _ set: fd_set) -> Bool {
        withUnsafeBytes(of: set) { raw in
            let words = raw.bindMemory(to: UInt.self)
            return words[Int(fd) / UInt.bitWidth] & (1 << (UInt(fd) % UInt(UInt.bitWidth))) != 0
        }
    }
}
