import CNGHTTP2
import Foundation
import GlimpseLoad
#if canImport(Glibc)
import Glibc
#endif

/// A tiny h2c server on libnghttp2's server session, for tests: one thread per connection, an
/// optional fixed service time applied serially per connection (a slow single worker), and a
/// handler that maps (method, path, body) to (status, headers, body).
final class TinyH2Server: @unchecked Sendable {
    typealias Handler = @Sendable (_ method: String, _ path: String, _ body: [UInt8]) -> (Int, [(String, String)], [UInt8])

    let port: Int
    private let listenFD: Int32
    private let handler: Handler
    private let serviceTimeNs: UInt64
    private let maxStreams: UInt32
    private let lock = NSLock()
    private var stopped = false

    init(serviceTime: Double = 0, maxConcurrentStreams: UInt32 = 100, handler: @escaping Handler) throws {
        self.handler = handler
        self.serviceTimeNs = UInt64(serviceTime * 1e9)
        self.maxStreams = maxConcurrentStreams
        let listenFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(listenFD, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(4))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listenFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(listenFD, 64) == 0 else { throw H2Error(.connect, detail: "bind/listen failed") }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listenFD, $0, &len) } }
        self.listenFD = listenFD
        port = Int(UInt16(bigEndian: addr.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
        shutdown(listenFD, Int32(SHUT_RDWR))
    }

    deinit { close(listenFD) }

    private func acceptLoop() {
        while !isStopped {
            var pfd = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            let fd = accept(listenFD, nil, nil)
            if fd < 0 { continue }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(4))
            let connection = TinyH2ServerConnection(fd: fd, server: self)
            Thread { connection.run() }.start()
        }
    }

    fileprivate var config: (Handler, UInt64, UInt32) { (handler, serviceTimeNs, maxStreams) }
}

private final class TinyH2ServerConnection {
    struct Stream { var method = "", path = "", body: [UInt8] = [], response: [UInt8] = [], offset = 0 }

    let fd: Int32
    let server: TinyH2Server
    var session: OpaquePointer?
    var streams: [Int32: Stream] = [:]
    var due: [(UInt64, Int32)] = []
    var lastDue: UInt64 = 0

    init(fd: Int32, server: TinyH2Server) {
        self.fd = fd
        self.server = server
    }

    func run() {
        defer { close(fd) }
        var cbs: OpaquePointer?
        nghttp2_session_callbacks_new(&cbs)
        nghttp2_session_callbacks_set_on_header_callback(cbs) { _, frame, name, nlen, value, vlen, _, user in
            guard let frame, let user else { return 0 }
            let me = Unmanaged<TinyH2ServerConnection>.fromOpaque(user).takeUnretainedValue()
            let n = String(decoding: UnsafeBufferPointer(start: name, count: nlen), as: UTF8.self)
            let v = String(decoding: UnsafeBufferPointer(start: value, count: vlen), as: UTF8.self)
            let id = frame.pointee.hd.stream_id
            if n == ":path" { me.streams[id, default: Stream()].path = v }
            if n == ":method" { me.streams[id, default: Stream()].method = v }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs) { _, _, id, data, len, user in
            guard let user else { return 0 }
            let me = Unmanaged<TinyH2ServerConnection>.fromOpaque(user).takeUnretainedValue()
            me.streams[id, default: Stream()].body.append(contentsOf: UnsafeBufferPointer(start: data, count: len))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs) { _, frame, user in
            guard let frame, let user else { return 0 }
            let me = Unmanaged<TinyH2ServerConnection>.fromOpaque(user).takeUnretainedValue()
            let type = frame.pointee.hd.type
            let endStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            if endStream && (type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue)) {
                me.requestComplete(frame.pointee.hd.stream_id)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs) { _, id, _, user in
            guard let user else { return 0 }
            Unmanaged<TinyH2ServerConnection>.fromOpaque(user).takeUnretainedValue().streams[id] = nil
            return 0
        }
        nghttp2_session_server_new(&session, cbs, Unmanaged.passUnretained(self).toOpaque())
        nghttp2_session_callbacks_del(cbs)
        defer { nghttp2_session_del(session) }
        var iv = [nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: server.config.2)]
        nghttp2_submit_settings(session, 0, &iv, 1)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while !server.isStopped {
            let now = MonotonicClock.now()
            respondDue(now: now)
            guard send() else { return }
            if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 { return }
            let wait = due.map { $0.0 > now ? Int32(($0.0 - now) / 1_000_000) : 0 }.min() ?? 100
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, min(wait, 100)) > 0 {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n <= 0 { return }
                if nghttp2_session_mem_recv(session, buffer, n) < 0 { return }
            }
        }
    }

    func requestComplete(_ id: Int32) {
        let (handler, serviceNs, _) = server.config
        guard var stream = streams[id] else { return }
        let (status, headers, body) = handler(stream.method, stream.path, stream.body)
        stream.response = body
        streams[id] = stream
        let now = MonotonicClock.now()
        lastDue = max(now, lastDue) + serviceNs
        due.append((lastDue, id))
        pendingHeaders[id] = [(":status", String(status))] + headers + [("content-length", String(body.count))]
    }

    var pendingHeaders: [Int32: [(String, String)]] = [:]

    func respondDue(now: UInt64) {
        let ready = due.filter { $0.0 <= now }
        due.removeAll { $0.0 <= now }
        for (_, id) in ready {
            guard let headers = pendingHeaders.removeValue(forKey: id) else { continue }
            // nghttp2 copies names and values during the call; free our copies right after it.
            let copies = headers.map { (strdup($0.0), strdup($0.1)) }
            defer { for (n, v) in copies { free(n); free(v) } }
            let nva = zip(copies, headers).map { copy, header in
                nghttp2_nv(name: UnsafeMutableRawPointer(copy.0)?.assumingMemoryBound(to: UInt8.self),
                           value: UnsafeMutableRawPointer(copy.1)?.assumingMemoryBound(to: UInt8.self),
                           namelen: header.0.utf8.count, valuelen: header.1.utf8.count, flags: 0)
            }
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil)) { _, id, buf, length, flags, _, user in
                guard let user, let buf, let flags else { return -902 }
                let me = Unmanaged<TinyH2ServerConnection>.fromOpaque(user).takeUnretainedValue()
                guard var stream = me.streams[id] else { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue; return 0 }
                let count = min(length, stream.response.count - stream.offset)
                for i in 0..<count { buf[i] = stream.response[stream.offset + i] }
                stream.offset += count
                me.streams[id] = stream
                if stream.offset >= stream.response.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
                return count
            }
            _ = nghttp2_submit_response(session, id, nva, nva.count, &provider)
        }
    }

    func send() -> Bool {
        while true {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n < 0 { return false }
            guard n > 0, let data else { return true }
            var off = 0
            while off < n {
                let w = Glibc.send(fd, data + off, n - off, Int32(MSG_NOSIGNAL))
                if w <= 0 { return false }
                off += w
            }
        }
    }
}
