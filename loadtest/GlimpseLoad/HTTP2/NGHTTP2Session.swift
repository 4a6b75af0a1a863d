import CNGHTTP2
#if canImport(Glibc)
import Glibc
#endif

/// Session events other than per-stream data, delivered on the thread that drives the session.
protocol NGHTTP2SessionHandler: AnyObject {
    /// The stream of `state` closed (`errorCode`: NGHTTP2_NO_ERROR or the RST_STREAM code).
    func sessionClosedStream(_ state: H2StreamState, errorCode: UInt32)
    func sessionReceivedGoaway(lastStream: Int32, errorCode: UInt32)
}

/// Owns one `nghttp2_session` (client side) and frees it in `deinit`. Input and output go through
/// memory buffers (`receive` / `serialize` into `output`), so the caller owns the socket and the poll loop.
///
/// Each stream's `H2StreamState` is its nghttp2 user data: the callbacks write status, headers, body and
/// send time straight into it (no lookup by stream id, no retain/release per callback). Streams whose
/// user data was cleared (`detach`: timed out, shut down) get no more events.
final class NGHTTP2Session {
    private var session: OpaquePointer?
    /// nghttp2's allocator for this session; released after the session (stored properties outlive `deinit`).
    private let pool = NGHTTP2MemoryPool()
    /// The owning connection. Not `weak`: a weak reference costs a side-table load in every callback;
    /// the connection owns this session and outlives it.
    unowned(unsafe) var handler: NGHTTP2SessionHandler?
    /// Whether non-pseudo response headers are kept (`H2StreamState.headers`).
    var collectsHeaders = true
    /// Serialized frames for the socket, filled by `serialize` (the caller empties it once written).
    let output = ByteBuffer(capacity: NGHTTP2Session.outputLimit + (1 << 14))
    /// When the current `serialize` began: the send time of the HEADERS frames it serializes (they leave
    /// in the same write), one clock read per batch instead of one per request.
    var sendClock: UInt64 = 0
    /// `serialize` stops taking frames once `output` holds this many bytes.
    static let outputLimit = 1 << 16

    init(maxConcurrentStreams: UInt32 = 1000, windowSize: Int32 = 1 << 24) throws {
        var callbacks: OpaquePointer?
        try nghttp2Check(nghttp2_session_callbacks_new(&callbacks), "nghttp2_session_callbacks_new")
        defer { nghttp2_session_callbacks_del(callbacks) }
        NGHTTP2Session.install(callbacks)
        var created: OpaquePointer?
        let user = Unmanaged.passUnretained(self).toOpaque()
        var mem = pool.mem
        try nghttp2Check(nghttp2_session_client_new3(&created, callbacks, user, nil, &mem), "nghttp2_session_client_new3")
        session = created
        // The client preface is queued by the session; our SETTINGS follow it.
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: maxConcurrentStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: UInt32(windowSize)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            // We never send RFC 7540 priority signals; saying so (RFC 9218) lets nghttp2 skip the priority
            // tree and drop closed streams at once instead of retaining them for it.
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES.rawValue), value: 1),
        ]
        try nghttp2Check(nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count), "nghttp2_submit_settings")
        try nghttp2Check(nghttp2_session_set_local_window_size(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 30), "set_local_window_size")
    }

    deinit { nghttp2_session_del(session) }

    var wantsIO: Bool { nghttp2_session_want_read(session) != 0 || nghttp2_session_want_write(session) != 0 }
    var wantsWrite: Bool { nghttp2_session_want_write(session) != 0 }

    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS (100 until its SETTINGS arrive).
    var peerMaxConcurrentStreams: UInt32 {
        nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
    }

    /// Submits a request whose body (if `hasBody`) is read from `state.requestBody`; `state` becomes the
    /// stream's user data (not retained: the caller keeps it alive until the stream closes or it calls
    /// `detach`). Returns the stream id.
    func submitRequest(_ block: H2HeaderBlock, hasBody: Bool, state: H2StreamState) throws -> Int32 {
        let id: Int32
        let user = Unmanaged.passUnretained(state).toOpaque()
        if hasBody {
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: { session, stream, buf, length, flags, _, _ in
                guard let buf, let flags else { return ssize_t(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
                guard let state = streamState(session, stream) else {
                    flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
                    return 0
                }
                let (count, last) = state._withUnsafeGuaranteedRef { $0.readBody(into: UnsafeMutableRawPointer(buf), capacity: length) }
                if last { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
                return ssize_t(count)
            })
            id = nghttp2_submit_request(session, nil, block.nva, block.count, &provider, user)
        } else {
            id = nghttp2_submit_request(session, nil, block.nva, block.count, nil, user)
        }
        return try nghttp2Check(id, "nghttp2_submit_request")
    }

    /// Forgets the state of an open stream: its later events are dropped.
    func detach(_ stream: Int32) {
        _ = nghttp2_session_set_stream_user_data(session, stream, nil)
    }

    func resetStream(_ stream: Int32, errorCode: UInt32 = NGHTTP2_CANCEL.rawValue) {
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, errorCode)
    }

    func terminate() { _ = nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue) }

    /// Feeds received bytes into the session (callbacks fire synchronously).
    func receive(_ bytes: UnsafeRawBufferPointer) throws {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        let n = nghttp2_session_mem_recv(session, base, bytes.count)
        try nghttp2Check(n, "nghttp2_session_mem_recv")
    }

    /// Appends pending frames to `output` (up to about `outputLimit` bytes) in one `nghttp2_session_send`:
    /// nghttp2 hands each frame to the send callback, which copies it.
    func serialize() throws {
        sendClock = MonotonicClock.now()
        try nghttp2Check(nghttp2_session_send(session), "nghttp2_session_send")
    }

    private static func install(_ cbs: OpaquePointer?) {
        nghttp2_session_callbacks_set_send_callback(cbs) { _, data, length, _, user in
            guard let user, let data else { return ssize_t(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            return Unmanaged<NGHTTP2Session>.fromOpaque(user)._withUnsafeGuaranteedRef { me in
                if me.output.count >= NGHTTP2Session.outputLimit { return ssize_t(NGHTTP2_ERR_WOULDBLOCK.rawValue) }
                me.output.append(data, count: length)
                return ssize_t(length)
            }
        }
        nghttp2_session_callbacks_set_on_header_callback(cbs) { session, frame, name, namelen, value, valuelen, _, user in
            guard let frame, let name, namelen > 0 else { return 0 }
            if name[0] == UInt8(ascii: ":") {
                guard namelen == 7 && memcmp(name, ":status", 7) == 0,
                      let state = streamState(session, frame.pointee.hd.stream_id) else { return 0 }
                let status = parseStatus(value, valuelen)
                state._withUnsafeGuaranteedRef { $0.status = status }
                return 0
            }
            // Other headers are looked at only when kept: no stream lookup otherwise.
            guard let user, Unmanaged<NGHTTP2Session>.fromOpaque(user)._withUnsafeGuaranteedRef({ $0.collectsHeaders }),
                  let state = streamState(session, frame.pointee.hd.stream_id) else { return 0 }
            let header = (String(decoding: UnsafeBufferPointer(start: name, count: namelen), as: UTF8.self),
                          String(decoding: UnsafeBufferPointer(start: value, count: valuelen), as: UTF8.self))
            state._withUnsafeGuaranteedRef { $0.headers.append(header) }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs) { session, _, stream, data, len, _ in
            guard let state = streamState(session, stream) else { return 0 }
            state._withUnsafeGuaranteedRef { $0.body.append(contentsOf: UnsafeBufferPointer(start: data, count: len)) }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(cbs) { session, frame, user in
            guard let frame, let user, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
                  let state = streamState(session, frame.pointee.hd.stream_id) else { return 0 }
            let now = Unmanaged<NGHTTP2Session>.fromOpaque(user)._withUnsafeGuaranteedRef { $0.sendClock }
            state._withUnsafeGuaranteedRef { $0.headersSent = now }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs) { _, frame, user in
            guard let frame, let user, frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) else { return 0 }
            Unmanaged<NGHTTP2Session>.fromOpaque(user)._withUnsafeGuaranteedRef {
                $0.handler?.sessionReceivedGoaway(lastStream: frame.pointee.goaway.last_stream_id, errorCode: frame.pointee.goaway.error_code)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs) { session, stream, code, user in
            guard let user, let state = streamState(session, stream) else { return 0 }
            Unmanaged<NGHTTP2Session>.fromOpaque(user)._withUnsafeGuaranteedRef { me in
                state._withUnsafeGuaranteedRef { me.handler?.sessionClosedStream($0, errorCode: code) }
            }
            return 0
        }
    }
}

/// The state of an open stream of ours (its nghttp2 user data), or nil (stream 0, detached, unknown).
@inline(__always)
private func streamState(_ session: OpaquePointer?, _ stream: Int32) -> Unmanaged<H2StreamState>? {
    guard stream > 0, let raw = nghttp2_session_get_stream_user_data(session, stream) else { return nil }
    return Unmanaged<H2StreamState>.fromOpaque(raw)
}

/// The value of `:status` (0 if it is not all digits).
private func parseStatus(_ digits: UnsafePointer<UInt8>?, _ count: Int) -> Int {
    guard let digits else { return 0 }
    var value = 0
    for k in 0..<count {
        let d = digits[k]
        guard d >= 48 && d <= 57, value < 100_000 else { return 0 }
        value = value * 10 + Int(d - 48)
    }
    return value
}

/// A growable byte buffer used by one thread: appends are a bounds check and a copy (no copy-on-write
/// checks, no generic collection code).
final class ByteBuffer {
    private(set) var base: UnsafeMutableRawPointer
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int) {
        self.capacity = Swift.max(capacity, 64)
        base = .allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    var isEmpty: Bool { count == 0 }

    func append(_ bytes: UnsafeRawPointer, count n: Int) {
        if count + n > capacity {
            var grown = capacity * 2
            while grown < count + n { grown *= 2 }
            let fresh = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 16)
            fresh.copyMemory(from: base, byteCount: count)
            base.deallocate()
            base = fresh
            capacity = grown
        }
        (base + count).copyMemory(from: bytes, byteCount: n)
        count += n
    }

    func removeAll() { count = 0 }

    /// The bytes from `offset` to the end.
    func bytes(from offset: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + offset, count: count - offset)
    }
}
