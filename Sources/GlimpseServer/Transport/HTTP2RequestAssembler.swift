import HTTPTypes
import NIOCore
import NIOHPACK
import NIOHTTP2

/// Builds whole requests from an HTTP/2 connection's frames, stream by stream, and decides what the
/// connection does with each frame: a pure state machine (no channel), so `HTTP2FrameResponder`
/// only carries out the actions it returns.
///
/// - A request is dispatched when its stream ends, with its body collected (at most `maxBody` bytes).
///   A body longer or shorter than its `content-length` resets the stream (RFC 9113 §8.1.1; the
///   handler's own content-length validation is off, as is its header block validation).
///   A larger `content-length` or body dispatches it at once as too large (its route answers with
///   its own error), and the rest of its body is read and dropped: the answer may reach the client
///   before it has sent everything, which clients such as curl expect to go on sending (a reset,
///   even with NO_ERROR, fails their request).
/// - Flow control: `NIOHTTP2Handler` without a stream multiplexer leaves the receive windows to its
///   user. It reports each window's size (`NIOHTTP2WindowUpdatedEvent`, counting the frames of
///   streams already closed too); once a window is down to half its target, a WINDOW_UPDATE brings
///   it back, for the connection and for a stream whose request is still arriving. What a client
///   may have in flight stays bounded by the windows, and a stream's body by `maxBody`.
struct HTTP2RequestAssembler {
    enum Action: Equatable {
        case dispatch(HTTP2StreamID, HTTPRequest, ByteBuffer)
        /// The request, whose body is over the limit (dropped).
        case dispatchTooLarge(HTTP2StreamID, HTTPRequest)
        /// Reset the stream with PROTOCOL_ERROR: a header block that is not a request.
        case resetMalformed(HTTP2StreamID)
        /// WINDOW_UPDATE frames to send (stream 0 is the connection).
        case windowUpdate(HTTP2StreamID, Int)
    }

    private struct Stream {
        var head: HTTPRequest
        var body: ByteBuffer
        var refused: Bool
        /// The declared `content-length`.
        var length: Int?
    }

    let maxBody: Int
    let streamWindow: Int
    let connectionWindow: Int
    private var streams: [HTTP2StreamID: Stream] = [:]

    init(maxBody: Int, streamWindow: Int, connectionWindow: Int) {
        self.maxBody = maxBody
        self.streamWindow = max(1, streamWindow)
        self.connectionWindow = max(65_535, connectionWindow)
    }

    /// Streams with a request still arriving.
    var openRequests: Int { streams.count }

    /// WINDOW_UPDATE for the connection that raises its window from the protocol's 65,535 bytes to
    /// `connectionWindow`; sent once, when the connection starts.
    var initialConnectionCredit: Action? {
        connectionWindow > 65_535 ? .windowUpdate(.rootStream, connectionWindow - 65_535) : nil
    }

    mutating func receive(_ frame: HTTP2Frame) -> [Action] {
        let id = frame.streamID
        switch frame.payload {
        case .headers(let headers):
            if streams[id] != nil {
                // Trailers: checked, then only their end of stream matters here.
                guard headers.endStream, HTTP2RequestFields.trailersAreValid(headers.headers) else {
                    streams[id] = nil
                    return [.resetMalformed(id)]
                }
                return finish(id)
            }
            guard let (head, length) = Self.request(headers.headers), !headers.endStream || (length ?? 0) == 0 else {
                return [.resetMalformed(id)]
            }
            var stream = Stream(head: head, body: ByteBuffer(), refused: false, length: length)
            var actions: [Action] = []
            if let length, length > maxBody {
                stream.refused = true
                actions.append(.dispatchTooLarge(id, head))
            }
            if headers.endStream {
                return stream.refused ? actions : [.dispatch(id, head, stream.body)]
            }
            streams[id] = stream
            return actions
        case .data(let data):
            guard var stream = streams[id] else { return [] }
            var actions: [Action] = []
            if !stream.refused, case .byteBuffer(var buffer) = data.data {
                if stream.body.readableBytes + buffer.readableBytes > maxBody {
                    stream.refused = true
                    stream.body = ByteBuffer()
                    actions.append(.dispatchTooLarge(id, stream.head))
                } else {
                    stream.body.writeBuffer(&buffer)
                    if let length = stream.length, stream.body.readableBytes > length {
                        streams[id] = nil
                        return [.resetMalformed(id)]
                    }
                }
            }
            streams[id] = stream
            return data.endStream ? actions + finish(id) : actions
        case .rstStream:
            streams[id] = nil
            return []
        default:
            return []
        }
    }

    /// The receive window of the connection (`.rootStream`) or of a stream is now `size` bytes: the
    /// WINDOW_UPDATE that restores it, once it is down to half its target (for a stream, only while
    /// its request is still arriving).
    func windowChanged(_ id: HTTP2StreamID, inboundWindow size: Int) -> Action? {
        let target = id == .rootStream ? connectionWindow : streamWindow
        guard size <= target / 2, id == .rootStream || streams[id] != nil else { return nil }
        return .windowUpdate(id, target - size)
    }

    /// The stream was closed by the protocol layer (reset, or an error answered there).
    mutating func streamClosed(_ id: HTTP2StreamID) {
        streams[id] = nil
    }

    private mutating func finish(_ id: HTTP2StreamID) -> [Action] {
        guard let stream = streams.removeValue(forKey: id), !stream.refused else { return [] }
        if let length = stream.length, length != stream.body.readableBytes { return [.resetMalformed(id)] }
        return [.dispatch(id, stream.head, stream.body)]
    }

    /// The request of a header block and its declared `content-length`, checked field by field
    /// (`HTTP2RequestFields`: the handler runs without its own header block validation): nil when the
    /// block is not a well-formed request.
    /// The header list's size is bounded by the HPACK decoder.
    static func request(_ headers: HPACKHeaders) -> (HTTPRequest, contentLength: Int?)? {
        var fields = HTTP2RequestFields()
        fields.reserveCapacity(headers.count)
        for (name, value, _) in headers where fields.field(name, value, limit: .max) != .accepted {
            return nil
        }
        return fields.complete().map { ($0, fields.contentLength) }
    }
}
