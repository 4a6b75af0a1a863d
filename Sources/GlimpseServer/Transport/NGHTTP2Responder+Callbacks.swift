import CNGHTTP2

/// The session's C callbacks. Each finds its `NGHTTP2Responder` through the session's user data
/// (unretained: the responder owns the session and frees it while alive), and runs on the
/// connection's event loop, inside the responder's own calls into the session.
extension NGHTTP2Responder {
    static func from(_ userData: UnsafeMutableRawPointer?) -> NGHTTP2Responder? {
        guard let userData else { return nil }
        return Unmanaged<NGHTTP2Responder>.fromOpaque(userData).takeUnretainedValue()
    }

    private static func isRequestHeaders(_ frame: nghttp2_frame) -> Bool {
        UInt32(frame.hd.type) == NGHTTP2_HEADERS.rawValue && frame.headers.cat == NGHTTP2_HCAT_REQUEST
    }

    private static func endsStream(_ frame: nghttp2_frame) -> Bool {
        frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
    }

    static func installCallbacks(_ callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame, NGHTTP2Responder.isRequestHeaders(frame.pointee),
                  let responder = NGHTTP2Responder.from(userData) else { return 0 }
            responder.streamOpened(frame.pointee.hd.stream_id)
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue,
                  let responder = NGHTTP2Responder.from(userData) else { return 0 }
            let id = frame.pointee.hd.stream_id
            let nameBytes = UnsafeBufferPointer(start: name, count: nameLength)
            let valueBytes = UnsafeBufferPointer(start: value, count: valueLength)
            if frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
                guard let index = responder.requests.index(forKey: id),
                      responder.requests.values[index].header(name: nameBytes, value: valueBytes,
                                                              limit: responder.maxHeaderListSize) == .malformed else { return 0 }
            } else {
                // Trailer fields are checked, not kept.
                guard !HTTP2RequestFields.trailerFieldIsValid(name: nameBytes, value: valueBytes) else { return 0 }
            }
            responder.requests[id] = nil
            responder.reset(id, code: NGHTTP2_PROTOCOL_ERROR)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, id, data, length, userData in
            guard let responder = NGHTTP2Responder.from(userData) else { return 0 }
            responder.requestData(id, UnsafeRawBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame, let responder = NGHTTP2Responder.from(userData) else { return 0 }
            let f = frame.pointee
            switch UInt32(f.hd.type) {
            case NGHTTP2_HEADERS.rawValue:
                if f.headers.cat == NGHTTP2_HCAT_REQUEST {
                    responder.requestHeadersReceived(f.hd.stream_id, endStream: NGHTTP2Responder.endsStream(f))
                } else if NGHTTP2Responder.endsStream(f) {
                    responder.requestEnded(f.hd.stream_id)
                }
            case NGHTTP2_DATA.rawValue:
                if NGHTTP2Responder.endsStream(f) { responder.requestEnded(f.hd.stream_id) }
            case NGHTTP2_PING.rawValue:
                if f.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 { responder.pingAcknowledged(f.ping.opaque_data) }
            default:
                break
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
            // A GOAWAY with an error code ends the connection (protocol error, reset flood, ...).
            guard let frame, UInt32(frame.pointee.hd.type) == NGHTTP2_GOAWAY.rawValue,
                  frame.pointee.goaway.error_code != NGHTTP2_NO_ERROR.rawValue,
                  let responder = NGHTTP2Responder.from(userData) else { return 0 }
            responder.terminating = true
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, id, _, userData in
            NGHTTP2Responder.from(userData)?.streamClosed(id)
            return 0
        }
    }

    /// Reads a response body for the session (`nghttp2_data_provider`).
    static var readBody: nghttp2_data_source_read_callback {
        { _, id, buffer, length, flags, _, userData in
            guard let responder = NGHTTP2Responder.from(userData), let buffer, let flags else {
                return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue)
            }
            let (count, end) = responder.readBody(id, into: UnsafeMutableRawBufferPointer(start: buffer, count: length))
            if end { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
            return count
        }
    }
}
