import CNGHTTP2
import HTTPTypes
import NIOCore

/// A libnghttp2 call that failed, with the library's error code (`nghttp2_error`, always negative).
struct NGHTTP2Error: Error, CustomStringConvertible, Equatable {
    let code: Int32

    var description: String { "\(String(cString: nghttp2_strerror(code))) (\(code))" }

    /// Returns `result` when it is not an error code.
    @discardableResult
    static func check<Result: BinaryInteger>(_ result: Result) throws -> Result {
        guard result >= 0 else { throw NGHTTP2Error(code: Int32(truncatingIfNeeded: result)) }
        return result
    }
}

/// The protocol side of one server connection: an `nghttp2_session`, owned here and freed on deinit.
///
/// The session parses what `receive` is given and queues what it has to send; `output` takes the
/// queued bytes. Its callbacks (set by `install`) receive `userData`, and run only inside the calls
/// made on this object, on the caller's thread.
final class NGHTTP2Session {
    /// Our SETTINGS and limits.
    struct Settings {
        var maxConcurrentStreams: Int
        var initialWindowSize: Int
        var maxFrameSize: Int
        var maxHeaderListSize: Int
        var connectionWindowSize: Int
        /// Incoming RST_STREAM frames allowed in a burst, and regained per second; beyond them the
        /// connection is torn down with GOAWAY (the "rapid reset" attack, CVE-2023-44487).
        var resetBurst: UInt64 = 200
        var resetsPerSecond: UInt64 = 7
    }

    private let session: OpaquePointer

    /// A server session whose callbacks `install` sets; it queues our SETTINGS and connection window.
    init(settings: Settings, userData: UnsafeMutableRawPointer, install: (OpaquePointer) -> Void) throws {
        var callbacks: OpaquePointer?
        try NGHTTP2Error.check(nghttp2_session_callbacks_new(&callbacks))
        guard let callbacks else { throw NGHTTP2Error(code: NGHTTP2_ERR_NOMEM.rawValue) }
        defer { nghttp2_session_callbacks_del(callbacks) }
        install(callbacks)

        var option: OpaquePointer?
        try NGHTTP2Error.check(nghttp2_option_new(&option))
        guard let option else { throw NGHTTP2Error(code: NGHTTP2_ERR_NOMEM.rawValue) }
        defer { nghttp2_option_del(option) }
        // HTTP's rules are checked by `NGHTTP2IncomingRequest` (nghttp2's own refuse requests without `:authority`).
        nghttp2_option_set_no_http_messaging(option, 1)
        // Closed streams are not kept for the (deprecated) priority tree.
        nghttp2_option_set_no_closed_streams(option, 1)
        nghttp2_option_set_stream_reset_rate_limit(option, settings.resetBurst, settings.resetsPerSecond)

        var session: OpaquePointer?
        try NGHTTP2Error.check(nghttp2_session_server_new2(&session, callbacks, userData, option))
        guard let session else { throw NGHTTP2Error(code: NGHTTP2_ERR_NOMEM.rawValue) }
        self.session = session

        let entries = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                   value: UInt32(clamping: settings.maxConcurrentStreams)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                                   value: UInt32(clamping: settings.initialWindowSize)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_FRAME_SIZE.rawValue),
                                   value: UInt32(clamping: settings.maxFrameSize)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                                   value: UInt32(clamping: settings.maxHeaderListSize)),
        ]
        try NGHTTP2Error.check(nghttp2_submit_settings(session, Self.noFlags, entries, entries.count))
        if settings.connectionWindowSize > 65_535 {
            try NGHTTP2Error.check(nghttp2_session_set_local_window_size(
                session, Self.noFlags, 0, Int32(clamping: settings.connectionWindowSize)))
        }
    }

    deinit { nghttp2_session_del(session) }

    private static let noFlags = UInt8(NGHTTP2_FLAG_NONE.rawValue)

    /// Parses received bytes, calling the callbacks. A thrown error is fatal for the connection.
    func receive(_ bytes: ByteBuffer) throws {
        try bytes.withUnsafeReadableBytes { raw in
            guard let base = raw.baseAddress, raw.count > 0 else { return }
            var offset = 0
            while offset < raw.count {
                let used = try NGHTTP2Error.check(nghttp2_session_mem_recv(
                    session, base.advanced(by: offset).assumingMemoryBound(to: UInt8.self), raw.count - offset))
                guard used > 0 else { return }
                offset += used
            }
        }
    }

    /// Appends every frame the session has queued to `buffer`.
    func output(into buffer: inout ByteBuffer) throws {
        while true {
            var data: UnsafePointer<UInt8>?
            let count = try NGHTTP2Error.check(nghttp2_session_mem_send(session, &data))
            guard count > 0, let data else { return }
            buffer.writeBytes(UnsafeRawBufferPointer(start: data, count: count))
        }
    }

    /// Whether frames are queued.
    var wantsWrite: Bool { nghttp2_session_want_write(session) != 0 }

    /// Queues a response: `:status`, the fields HTTP/2 sends for `head` (`HTTP2FieldRules`), then a
    /// body of `bodyBytes` read through `body` when there is one.
    func submitResponse(stream: Int32, head: HTTPResponse, bodyBytes: Int, body: nghttp2_data_source_read_callback?) throws {
        // Names and values side by side in one buffer; nghttp2 copies them.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        var lengths: [(name: Int, value: Int)] = []
        lengths.reserveCapacity(head.headerFields.count + 4)
        func add(_ name: String, _ value: String) {
            let start = bytes.count
            bytes.append(contentsOf: name.utf8)
            let nameLength = bytes.count - start
            bytes.append(contentsOf: value.utf8)
            lengths.append((nameLength, bytes.count - start - nameLength))
        }
        add(":status", String(head.status.code))
        HTTP2FieldRules.forEachResponseField(head, bodyBytes: bodyBytes, add)
        let result = bytes.withUnsafeMutableBufferPointer { raw -> Int32 in
            guard let base = raw.baseAddress else { return NGHTTP2_ERR_INVALID_ARGUMENT.rawValue }
            var offset = 0
            let nv = lengths.map { length -> nghttp2_nv in
                defer { offset += length.name + length.value }
                return nghttp2_nv(name: base + offset, value: base + offset + length.name, namelen: length.name,
                                  valuelen: length.value, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            guard let body else { return nghttp2_submit_response(session, stream, nv, nv.count, nil) }
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: body)
            return nghttp2_submit_response(session, stream, nv, nv.count, &provider)
        }
        try NGHTTP2Error.check(result)
    }

    /// Queues RST_STREAM.
    func submitReset(stream: Int32, code: nghttp2_error_code) throws {
        try NGHTTP2Error.check(nghttp2_submit_rst_stream(session, Self.noFlags, stream, code.rawValue))
    }

    /// Queues the first GOAWAY of a graceful shutdown (the largest stream id: streams in flight are
    /// still accepted).
    func submitShutdownNotice() throws {
        try NGHTTP2Error.check(nghttp2_submit_shutdown_notice(session))
    }

    /// Queues GOAWAY naming the last stream that is served.
    func submitGoAway(lastStreamID: Int32, code: nghttp2_error_code = NGHTTP2_NO_ERROR) throws {
        try NGHTTP2Error.check(nghttp2_submit_goaway(session, Self.noFlags, lastStreamID, code.rawValue, nil, 0))
    }

    /// Queues a PING carrying `data`.
    func submitPing(_ data: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)) throws {
        var data = data
        let result = withUnsafeBytes(of: &data) { raw in
            nghttp2_submit_ping(session, Self.noFlags, raw.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
        try NGHTTP2Error.check(result)
    }
}
