import CNGHTTP2

/// Events of a client session, delivered on the thread that drives the session.
protocol NGHTTP2SessionHandler: AnyObject {
    func sessionReceivedHeader(stream: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>)
    func sessionReceivedData(stream: Int32, _ data: UnsafeBufferPointer<UInt8>)
    func sessionSentHeaders(stream: Int32)
    func sessionClosedStream(stream: Int32, errorCode: UInt32)
    func sessionReceivedGoaway(lastStream: Int32, errorCode: UInt32)
    /// Copies up to `buffer.count` bytes of the request body of `stream`; returns (count, isLast).
    func sessionReadBody(stream: Int32, into buffer: UnsafeMutableRawBufferPointer) -> (Int, Bool)
}

/// Owns one `nghttp2_session` (client side) and frees it in `deinit`. Input and output go through
/// memory buffers (`receive` / `nextOutput`), so the caller owns the socket and the poll loop.
final class NGHTTP2Session {
    private var session: OpaquePointer?
    /// The owning connection. Not `weak`: a weak reference costs a side-table load in every callback;
    /// the connection owns this session and outlives it.
    unowned(unsafe) var handler: NGHTTP2SessionHandler?

    init(maxConcurrentStreams: UInt32 = 1000, windowSize: Int32 = 1 << 24) throws {
        var callbacks: OpaquePointer?
        try nghttp2Check(nghttp2_session_callbacks_new(&callbacks), "nghttp2_session_callbacks_new")
        defer { nghttp2_session_callbacks_del(callbacks) }
        NGHTTP2Session.install(callbacks)
        var created: OpaquePointer?
        let user = Unmanaged.passUnretained(self).toOpaque()
        try nghttp2Check(nghttp2_session_client_new(&created, callbacks, user), "nghttp2_session_client_new")
        session = created
        // The client preface is queued by the session; our SETTINGS follow it.
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: maxConcurrentStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: UInt32(windowSize)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
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

    /// Submits a request whose body (if `hasBody`) is pulled through `sessionReadBody`. Returns the stream id.
    func submitRequest(_ block: H2HeaderBlock, hasBody: Bool) throws -> Int32 {
        let id: Int32
        if hasBody {
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: { session, stream, buf, length, flags, _, user in
                guard let user, let buf, let flags else { return ssize_t(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
                let me = Unmanaged<NGHTTP2Session>.fromOpaque(user).takeUnretainedValue()
                guard let handler = me.handler else { return ssize_t(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
                let (count, last) = handler.sessionReadBody(stream: stream, into: UnsafeMutableRawBufferPointer(start: buf, count: length))
                if last { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
                return ssize_t(count)
            })
            id = nghttp2_submit_request(session, nil, block.nva, block.count, &provider, nil)
        } else {
            id = nghttp2_submit_request(session, nil, block.nva, block.count, nil, nil)
        }
        return try nghttp2Check(id, "nghttp2_submit_request")
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

    /// The next chunk of serialized frames to write, or an empty buffer when nothing is pending.
    /// The memory is valid until the next call into the session.
    func nextOutput() throws -> UnsafeRawBufferPointer {
        var data: UnsafePointer<UInt8>?
        let n = try nghttp2Check(nghttp2_session_mem_send(session, &data), "nghttp2_session_mem_send")
        return UnsafeRawBufferPointer(start: data, count: n)
    }

    private static func install(_ cbs: OpaquePointer?) {
        nghttp2_session_callbacks_set_on_header_callback(cbs) { _, frame, name, namelen, value, valuelen, _, user in
            guard let frame, let h = sessionHandler(user) else { return 0 }
            h.sessionReceivedHeader(stream: frame.pointee.hd.stream_id,
                                    name: UnsafeBufferPointer(start: name, count: namelen),
                                    value: UnsafeBufferPointer(start: value, count: valuelen))
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs) { _, _, stream, data, len, user in
            sessionHandler(user)?.sessionReceivedData(stream: stream, UnsafeBufferPointer(start: data, count: len))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(cbs) { _, frame, user in
            guard let frame else { return 0 }
            if frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) {
                sessionHandler(user)?.sessionSentHeaders(stream: frame.pointee.hd.stream_id)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs) { _, frame, user in
            guard let frame else { return 0 }
            if frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) {
                sessionHandler(user)?.sessionReceivedGoaway(lastStream: frame.pointee.goaway.last_stream_id,
                                                      errorCode: frame.pointee.goaway.error_code)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs) { _, stream, code, user in
            sessionHandler(user)?.sessionClosedStream(stream: stream, errorCode: code)
            return 0
        }
    }
}

/// The handler of the session whose `user_data` is `user` (a free function: C callbacks cannot capture).
private func sessionHandler(_ user: UnsafeMutableRawPointer?) -> NGHTTP2SessionHandler? {
    guard let user else { return nil }
    return Unmanaged<NGHTTP2Session>.fromOpaque(user).takeUnretainedValue().handler
}
