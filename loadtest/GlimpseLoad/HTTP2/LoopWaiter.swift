#if canImport(Glibc)
import Glibc
#endif

/// Waits for the sockets and wake-up pipes of the connections one loop thread runs, with microsecond
/// timeouts, so open-loop arrivals are sent on time.
///
/// It uses epoll when the C library has `epoll_pwait2` (nanosecond timeouts; found with `dlsym`, since
/// the Glibc module exposes no epoll): descriptors are registered once, so a wait costs no per-descriptor
/// setup in the kernel. Otherwise `select` while every descriptor fits an `fd_set`, past that `poll`
/// with millisecond timeouts.
final class LoopWaiter {
    /// One connection's descriptors: what to wait for, and (after `wait`) what is ready.
    struct Item {
        var socket: Int32
        var wake: Int32
        var active = true
        var wantWrite = false
        var readable = false
        var writable = false
        var woken = false
        /// What epoll has registered for `socket` (EPOLLOUT included or not).
        fileprivate var registeredWrite = false

        init(socket: Int32, wake: Int32) {
            self.socket = socket
            self.wake = wake
        }
    }

    var items: [Item]
    private var epoll: Epoll?

    /// `useEpoll: false` forces select/poll (for tests).
    init(_ items: [Item], useEpoll: Bool = true) {
        self.items = items
        if useEpoll, let epoll = Epoll(capacity: max(items.count * 2, 8)) {
            var ok = true
            for (i, item) in items.enumerated() {
                ok = ok && epoll.control(Epoll.add, item.socket, events: Epoll.readEvents, data: UInt64(i) << 1)
                ok = ok && epoll.control(Epoll.add, item.wake, events: Epoll.readEvents, data: UInt64(i) << 1 | 1)
            }
            self.epoll = ok ? epoll : nil
        }
    }

    /// Stops waiting for item `index` (its connection's part of the loop has ended).
    func deactivate(_ index: Int) {
        guard items[index].active else { return }
        items[index].active = false
        if let epoll {
            _ = epoll.control(Epoll.remove, items[index].socket, events: 0, data: 0)
            _ = epoll.control(Epoll.remove, items[index].wake, events: 0, data: 0)
        }
    }

    /// Waits until a descriptor of an active item is ready or `timeoutNs` passes; sets the ready flags.
    /// Returns the `errno` of a failed wait (nil on success or on a signal).
    func wait(timeoutNs: UInt64) -> Int32? {
        for i in items.indices {
            items[i].readable = false
            items[i].writable = false
            items[i].woken = false
        }
        if let epoll {
            if let result = waitEpoll(epoll, timeoutNs: timeoutNs) { return result.code }
            self.epoll = nil  // epoll_pwait2 unsupported by the kernel: select from now on
            for i in items.indices where items[i].active {
                _ = epoll.control(Epoll.remove, items[i].socket, events: 0, data: 0)
                _ = epoll.control(Epoll.remove, items[i].wake, events: 0, data: 0)
            }
        }
        return waitSelect(timeoutNs: timeoutNs)
    }

    /// nil: epoll cannot wait here (ENOSYS); otherwise the outcome (code nil on success).
    private func waitEpoll(_ epoll: Epoll, timeoutNs: UInt64) -> (code: Int32?, Void)? {
        for i in items.indices where items[i].active && items[i].wantWrite != items[i].registeredWrite {
            let events = items[i].wantWrite ? Epoll.readEvents | Epoll.writeEvent : Epoll.readEvents
            if !epoll.control(Epoll.modify, items[i].socket, events: events, data: UInt64(i) << 1) { return (errno, ()) }
            items[i].registeredWrite = items[i].wantWrite
        }
        let n = epoll.wait(timeoutNs: timeoutNs)
        if n < 0 {
            let code = errno
            if code == ENOSYS { return nil }
            return (code == EINTR ? nil : code, ())
        }
        for k in 0..<Int(n) {
            let (events, data) = epoll.event(k)
            let i = Int(data >> 1)
            guard i < items.count, items[i].active else { continue }
            if data & 1 == 1 {
                items[i].woken = true
            } else {
                items[i].readable = events & (Epoll.readEvents) != 0
                items[i].writable = events & Epoll.writeEvent != 0
            }
        }
        return (nil, ())
    }

    private func waitSelect(timeoutNs: UInt64) -> Int32? {
        let setSize = Int32(MemoryLayout<fd_set>.size * 8)
        var highest: Int32 = -1
        for item in items where item.active { highest = max(highest, item.socket, item.wake) }
        if highest < setSize {
            var readSet = fd_set(), writeSet = fd_set()
            for item in items where item.active {
                Self.add(item.socket, to: &readSet)
                Self.add(item.wake, to: &readSet)
                if item.wantWrite { Self.add(item.socket, to: &writeSet) }
            }
            var tv = timeval(tv_sec: Int(timeoutNs / 1_000_000_000), tv_usec: Int((timeoutNs % 1_000_000_000 + 999) / 1000))
            let n = select(highest + 1, &readSet, &writeSet, nil, &tv)
            if n < 0 { return errno == EINTR ? nil : errno }
            for i in items.indices where items[i].active {
                items[i].readable = Self.contains(items[i].socket, readSet)
                items[i].writable = Self.contains(items[i].socket, writeSet)
                items[i].woken = Self.contains(items[i].wake, readSet)
            }
            return nil
        }
        var fds: [pollfd] = []
        var owners: [Int] = []
        for (i, item) in items.enumerated() where item.active {
            fds.append(pollfd(fd: item.socket, events: Int16(POLLIN) | (item.wantWrite ? Int16(POLLOUT) : 0), revents: 0))
            fds.append(pollfd(fd: item.wake, events: Int16(POLLIN), revents: 0))
            owners.append(i)
        }
        let n = poll(&fds, nfds_t(fds.count), Int32((timeoutNs + 999_999) / 1_000_000))
        if n < 0 { return errno == EINTR ? nil : errno }
        for (k, i) in owners.enumerated() {
            items[i].readable = fds[2 * k].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0
            items[i].writable = fds[2 * k].revents & Int16(POLLOUT) != 0
            items[i].woken = fds[2 * k + 1].revents != 0
        }
        return nil
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

/// An epoll instance through the C library's own functions, looked up with `dlsym`.
private final class Epoll {
    typealias Create1 = @convention(c) (Int32) -> Int32
    typealias Control = @convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32
    typealias Wait2 = @convention(c) (Int32, UnsafeMutableRawPointer?, Int32, UnsafePointer<timespec>?, UnsafeRawPointer?) -> Int32

    static let add: Int32 = 1, remove: Int32 = 2, modify: Int32 = 3
    static let readEvents: UInt32 = 0x001 | 0x008 | 0x010  // EPOLLIN | EPOLLERR | EPOLLHUP
    static let writeEvent: UInt32 = 0x004  // EPOLLOUT
    /// `struct epoll_event`: packed on x86-64 (12 bytes), naturally aligned elsewhere (16).
    #if arch(x86_64)
    static let eventSize = 12, dataOffset = 4
    #else
    static let eventSize = 16, dataOffset = 8
    #endif

    private static let api: (Create1, Control, Wait2)? = {
        guard let c = dlsym(nil, "epoll_create1"), let k = dlsym(nil, "epoll_ctl"), let w = dlsym(nil, "epoll_pwait2") else { return nil }
        return (unsafeBitCast(c, to: Create1.self), unsafeBitCast(k, to: Control.self), unsafeBitCast(w, to: Wait2.self))
    }()

    let fd: Int32
    private let control: Control
    private let wait2: Wait2
    private let events: UnsafeMutableRawPointer
    private let capacity: Int

    init?(capacity: Int) {
        guard let (create, control, wait2) = Self.api else { return nil }
        let fd = create(0x80000)  // EPOLL_CLOEXEC
        guard fd >= 0 else { return nil }
        self.fd = fd
        self.control = control
        self.wait2 = wait2
        self.capacity = capacity
        events = .allocate(byteCount: capacity * Self.eventSize, alignment: 8)
    }

    deinit {
        events.deallocate()
        Glibc.close(fd)
    }

    func control(_ op: Int32, _ target: Int32, events: UInt32, data: UInt64) -> Bool {
        var event = (UInt64(0), UInt64(0))  // room for one epoll_event
        return withUnsafeMutableBytes(of: &event) { raw in
            raw.storeBytes(of: events, toByteOffset: 0, as: UInt32.self)
            raw.storeBytes(of: data, toByteOffset: Self.dataOffset, as: UInt64.self)
            return control(fd, op, target, raw.baseAddress) == 0
        }
    }

    func wait(timeoutNs: UInt64) -> Int32 {
        var ts = timespec(tv_sec: Int(timeoutNs / 1_000_000_000), tv_nsec: Int(timeoutNs % 1_000_000_000))
        return wait2(fd, events, Int32(capacity), &ts, nil)
    }

    func event(_ k: Int) -> (UInt32, UInt64) {
        let base = events + k * Self.eventSize
        return (base.loadUnaligned(fromByteOffset: 0, as: UInt32.self), base.loadUnaligned(fromByteOffset: Self.dataOffset, as: UInt64.self))
    }
}
