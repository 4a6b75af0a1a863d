#if canImport(Glibc)
import Glibc
#endif

/// A non-blocking TCP socket owned by one connection; closed in `deinit`.
final class PosixSocket {
    let fd: Int32

    /// Resolves `host`, connects with a timeout, then switches to non-blocking mode with TCP_NODELAY.
    init(host: String, port: Int, timeoutMs: Int32 = 5000) throws {
        guard (1...65535).contains(port) else {
            throw H2Error(.connect, detail: "port \(port) out of range")
        }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            let text = gai_strerror(rc).map { String(cString: $0) } ?? "error \(rc)"
            throw H2Error(.connect, detail: "resolve \(host): \(text)")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let ai = node {
            node = ai.pointee.ai_next
            let s = socket(ai.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            if s < 0 { lastError = String(cString: strerror(errno)); continue }
            if let error = PosixSocket.connect(s, ai.pointee.ai_addr, ai.pointee.ai_addrlen, timeoutMs) {
                lastError = error
                Glibc.close(s)
                continue
            }
            var one: Int32 = 1
            setsockopt(s, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            fd = s
            return
        }
        throw H2Error(.connect, detail: "connect \(host):\(port): \(lastError)")
    }

    /// Non-blocking connect bounded by `timeoutMs`; returns an error text or nil.
    private static func connect(_ s: Int32, _ addr: UnsafeMutablePointer<sockaddr>?, _ len: socklen_t, _ timeoutMs: Int32) -> String? {
        let flags = fcntl(s, F_GETFL, 0)
        _ = fcntl(s, F_SETFL, flags | O_NONBLOCK)
        if Glibc.connect(s, addr, len) == 0 { return nil }
        guard errno == EINPROGRESS else { return String(cString: strerror(errno)) }
        var pfd = pollfd(fd: s, events: Int16(POLLOUT), revents: 0)
        let ready = poll(&pfd, 1, timeoutMs)
        if ready == 0 { return "timed out after \(timeoutMs) ms" }
        if ready < 0 { return String(cString: strerror(errno)) }
        var soError: Int32 = 0
        var soLen = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(s, SOL_SOCKET, SO_ERROR, &soError, &soLen)
        return soError == 0 ? nil : String(cString: strerror(soError))
    }

    enum IOResult { case bytes(Int), wouldBlock, eof, failed(String) }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .eof }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
            return .failed(String(cString: strerror(errno)))
        }
    }

    func write(_ buffer: UnsafeRawBufferPointer) -> IOResult {
        while true {
            let n = send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
            if n >= 0 { return .bytes(n) }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
            return .failed(String(cString: strerror(errno)))
        }
    }

    /// Ends the TCP connection in both directions now; the descriptor itself is closed in `deinit`.
    func shutdownBoth() {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    deinit { Glibc.close(fd) }
}

/// A self-pipe used to wake a connection's poll loop from other threads; closed in `deinit`.
final class WakeupFD {
    /// The read end, polled by the loop.
    let fd: Int32
    private let writeEnd: Int32

    init() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            throw H2Error(.connect, detail: "pipe: \(String(cString: strerror(errno)))")
        }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL, 0) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        fd = ends[0]
        writeEnd = ends[1]
    }

    func signal() {
        var one: UInt8 = 1
        _ = Glibc.write(writeEnd, &one, 1)
    }

    func drain() {
        var scratch = [UInt8](repeating: 0, count: 64)
        while Glibc.read(fd, &scratch, 64) > 0 {}
    }

    deinit {
        Glibc.close(fd)
        Glibc.close(writeEnd)
    }
}
