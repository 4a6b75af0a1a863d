import Foundation

/// A deliberately minimal HTTP/2 client over a plain socket, for sending what well-behaved clients
/// never send: floods of resets, tiny windows, oversized header blocks. It writes frames byte by byte
/// as RFC 9113 §4 lays them out and encodes headers with HPACK literals only (RFC 7541 §6.2.2).
final class RawH2 {
    enum FrameType: UInt8 {
        case data = 0, headers = 1, rstStream = 3, settings = 4, ping = 6, goAway = 7, windowUpdate = 8, continuation = 9
    }

    struct Frame {
        var type: UInt8
        var flags: UInt8
        var stream: UInt32
        var payload: [UInt8]
    }

    let fd: Int32
    private var inbox: [UInt8] = []
    /// Bytes the kernel accepted from `send` so far (the preface included), so a test can tell an
    /// attack that was sent, even in part, from one that never left the client.
    private(set) var bytesSent = 0

    init(port: Int, settings: [(UInt16, UInt32)] = []) throws {
        fd = try connectLoopbackSocket(port: port)
        var out = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        var payload: [UInt8] = []
        for (id, value) in settings {
            payload += [UInt8(id >> 8), UInt8(id & 0xff)] + Self.be32(value)
        }
        out += Self.frame(.settings, flags: 0, stream: 0, payload: payload)
        try send(out)
        // Acknowledge the server's SETTINGS once it arrives, as a real client does.
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            let (frames, closed) = readFrames(for: 0.2)
            pending += frames
            if frames.contains(where: { $0.type == FrameType.settings.rawValue && $0.flags & 0x1 == 0 }) {
                try send(Self.frame(.settings, flags: 0x1, stream: 0, payload: []))
                return
            }
            if closed { break }
        }
        throw TestServerError(description: "the server sent no SETTINGS")
    }

    private var pending: [Frame] = []

    deinit { close(fd) }

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xff), UInt8((v >> 8) & 0xff), UInt8(v & 0xff)] }

    static func frame(_ type: FrameType, flags: UInt8, stream: UInt32, payload: [UInt8]) -> [UInt8] {
        let n = payload.count
        return [UInt8(n >> 16), UInt8((n >> 8) & 0xff), UInt8(n & 0xff), type.rawValue, flags] + be32(stream & 0x7fff_ffff) + payload
    }

    /// HPACK integer with an N-bit prefix (RFC 7541 §5.1); `first` holds the pattern bits above it.
    static func integer(_ value: Int, prefixBits: Int, first: UInt8) -> [UInt8] {
        let max = (1 << prefixBits) - 1
        if value < max { return [first | UInt8(value)] }
        var out = [first | UInt8(max)]
        var rest = value - max
        while rest >= 128 {
            out.append(UInt8(rest % 128 + 128))
            rest /= 128
        }
        out.append(UInt8(rest))
        return out
    }

    static func string(_ s: String) -> [UInt8] {
        let bytes = Array(s.utf8)
        return integer(bytes.count, prefixBits: 7, first: 0) + bytes
    }

    /// A header block for a request: pseudo-headers then extra headers, all as literals without indexing.
    static func headerBlock(method: String, path: String, extra: [(String, String)] = []) -> [UInt8] {
        var block: [UInt8] = []
        for (name, value) in [(":method", method), (":scheme", "http"), (":path", path), (":authority", "127.0.0.1")] + extra {
            block += [0x00] + string(name) + string(value)
        }
        return block
    }

    /// A header block of exactly these fields, in this order (any names and values, well-formed or not).
    static func headerBlock(fields: [(String, String)]) -> [UInt8] {
        fields.flatMap { [0x00] + string($0.0) + string($0.1) }
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestServerError(description: "send failed (connection closed by the server?)") }
            offset += n
            bytesSent += n
        }
    }

    /// HEADERS (split into CONTINUATION frames of at most `maxFrame` bytes when large).
    func sendHeaders(stream: UInt32, block: [UInt8], endStream: Bool, maxFrame: Int = 16384) throws {
        var chunks: [[UInt8]] = []
        var i = 0
        repeat {
            chunks.append(Array(block[i..<min(block.count, i + maxFrame)]))
            i += maxFrame
        } while i < block.count
        var out: [UInt8] = []
        for (k, chunk) in chunks.enumerated() {
            let last = k == chunks.count - 1
            let flags: UInt8 = (last ? 0x4 : 0) | (k == 0 && endStream ? 0x1 : 0)
            out += Self.frame(k == 0 ? .headers : .continuation, flags: flags, stream: stream, payload: chunk)
        }
        try send(out)
    }

    /// Frames received until the connection closes or `seconds` pass.
    func read(for seconds: Double) -> (frames: [Frame], closed: Bool) {
        let (frames, closed) = readFrames(for: seconds)
        defer { pending = [] }
        return (pending + frames, closed)
    }

    private func readFrames(for seconds: Double) -> (frames: [Frame], closed: Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65536)
        var closed = false
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { closed = true; break }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                closed = true
                break
            }
            inbox += buffer[0..<n]
        }
        var frames: [Frame] = []
        var i = 0
        while inbox.count - i >= 9 {
            let length = Int(inbox[i]) << 16 | Int(inbox[i + 1]) << 8 | Int(inbox[i + 2])
            guard inbox.count - i >= 9 + length else { break }
            let stream = UInt32(inbox[i + 5] & 0x7f) << 24 | UInt32(inbox[i + 6]) << 16 | UInt32(inbox[i + 7]) << 8 | UInt32(inbox[i + 8])
            frames.append(Frame(type: inbox[i + 3], flags: inbox[i + 4], stream: stream, payload: Array(inbox[(i + 9)..<(i + 9 + length)])))
            i += 9 + length
        }
        inbox.removeFirst(i)
        return (frames, closed)
    }

    /// The error code of a GOAWAY frame.
    static func goAwayCode(_ frame: Frame) -> UInt32? {
        guard frame.type == FrameType.goAway.rawValue, frame.payload.count >= 8 else { return nil }
        return frame.payload[4..<8].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
