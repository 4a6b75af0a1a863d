import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A tiny HTTP/1.1 file server on 127.0.0.1 for download tests. It honours `Range: bytes=N-`
/// (206 / 416), can redirect, and can misbehave on purpose: corrupt the bytes it sends, or close
/// the connection after a number of body bytes. One thread per connection; `Connection: close`.
final class RangeHTTPServer: @unchecked Sendable {
    enum Behaviour {
        case normal
        /// Flip one byte in the middle of every body.
        case corrupt
        /// Send full headers, then only this many body bytes, then close.
        case cutAfter(Int)
        /// Ignore `Range` and always answer 200 with the whole file.
        case ignoreRange
        /// Send the headers, then nothing for this many seconds.
        case stall(seconds: Double)
    }

    struct Request {
        var path: String
        var range: String?
    }

    private let lock = NSLock()
    private var files: [String: [UInt8]] = [:]
    private var redirects: [String: String] = [:]
    private var _behaviour: Behaviour = .normal
    private var _requests: [Request] = []
    private let listener: Int32
    let port: Int

    var behaviour: Behaviour {
        get { lock.locked { _behaviour } }
        set { lock.locked { _behaviour = newValue } }
    }

    var requests: [Request] { lock.locked { _requests } }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerError("socket failed") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw ServerError("bind/listen failed")
        }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
        let thread = Thread { [weak self] in self?.acceptLoop() }
        thread.start()
    }

    func serve(_ path: String, bytes: [UInt8]) { lock.locked { files[path] = bytes } }
    func redirect(_ path: String, to location: String) { lock.locked { redirects[path] = location } }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            let thread = Thread { [self] in handle(client) }
            thread.start()
        }
    }

    private func handle(_ fd: Int32) {
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var head = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !head.ends(with: [13, 10, 13, 10]) {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 || head.count > 65536 { return }
            head += buffer[0..<n]
        }
        let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2 else { return }
        let path = String(parts[1])
        var range: String?
        for line in lines.dropFirst() {
            if let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == "range" {
                range = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        let (file, location, behaviour): ([UInt8]?, String?, Behaviour) = lock.locked {
            _requests.append(Request(path: path, range: range))
            return (files[path], redirects[path], _behaviour)
        }
        if let location {
            send(fd, "HTTP/1.1 302 Found\r\nLocation: \(location)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        }
        guard var body = file else {
            send(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found")
            return
        }
        if case .corrupt = behaviour, !body.isEmpty { body[body.count / 2] ^= 0xFF }
        var start = 0
        var status = "200 OK"
        var extra = ""
        if let range, range.hasPrefix("bytes="), range.hasSuffix("-"), let n = Int(range.dropFirst(6).dropLast()) {
            if case .ignoreRange = behaviour {
            } else if n >= body.count {
                send(fd, "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */\(body.count)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            } else {
                start = n
                status = "206 Partial Content"
                extra = "Content-Range: bytes \(n)-\(body.count - 1)/\(body.count)\r\n"
            }
        }
        let slice = Array(body[start...])
        send(fd, "HTTP/1.1 \(status)\r\nContent-Type: application/octet-stream\r\nContent-Length: \(slice.count)\r\n\(extra)Accept-Ranges: bytes\r\nConnection: close\r\n\r\n")
        if case .stall(let seconds) = behaviour {
            Thread.sleep(forTimeInterval: seconds)
            return
        }
        var toSend = slice
        if case .cutAfter(let n) = behaviour { toSend = Array(slice.prefix(n)) }
        sendAll(fd, toSend)
    }

    private func send(_ fd: Int32, _ text: String) { sendAll(fd, Array(text.utf8)) }

    private func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    struct ServerError: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}

extension NSLock {
    fileprivate func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}
