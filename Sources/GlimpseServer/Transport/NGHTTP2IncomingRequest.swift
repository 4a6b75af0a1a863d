import CNGHTTP2
import HTTPTypes
import NIOCore

/// One request arriving on an nghttp2 stream: its header fields as the session decodes them, then
/// its body. A value: `NGHTTP2Responder` feeds it and carries out what it reports.
///
/// The session runs without nghttp2's HTTP messaging checks, which refuse a request without
/// `:authority` and `host` (HAProxy's HTTP/2 health checks send such requests, which RFC 9113 §8.3.1
/// allows). The checks are made here instead (RFC 9113 §8.2 and §8.3): valid lowercase names and
/// values, pseudo-header fields first, once each and as required, no connection-specific fields,
/// and a body as long as its `content-length`. The header list is bounded by `maxHeaderListSize`
/// (RFC 9113 §6.5.2: each field counts its name, its value and 32 bytes).
struct NGHTTP2IncomingRequest {
    enum HeaderResult: Equatable {
        case accepted
        /// The header list went over its limit: the request is answered 431 once its block ends.
        case tooLarge
        /// Not a field HTTP allows: reset the stream.
        case malformed
    }

    private var method: HTTPRequest.Method?
    private var scheme: String?
    private var authority: String?
    private var path: String?
    private var fields = HTTPFields()
    private var headerListSize = 0
    private var sawRegularField = false
    private(set) var headersTooLarge = false
    /// The request head, once its header block is complete.
    private(set) var head: HTTPRequest?
    /// The body so far (empty once `refused`).
    var body = ByteBuffer()
    /// The request was dispatched as too large: the rest of its body is dropped.
    var refused = false

    mutating func header(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, limit: Int) -> HeaderResult {
        headerListSize += name.count + value.count + 32
        if headersTooLarge || headerListSize > limit {
            headersTooLarge = true
            fields = HTTPFields()
            return .tooLarge
        }
        guard nghttp2_check_header_name(name.baseAddress, name.count) != 0,
              nghttp2_check_header_value_rfc9113(value.baseAddress, value.count) != 0 else { return .malformed }
        let valueText = String(decoding: value, as: UTF8.self)
        if name.first == UInt8(ascii: ":") {
            guard !sawRegularField else { return .malformed }
            switch String(decoding: name, as: UTF8.self) {
            case ":method":
                guard method == nil, let m = HTTPRequest.Method(valueText) else { return .malformed }
                method = m
            case ":scheme":
                guard scheme == nil, !valueText.isEmpty else { return .malformed }
                scheme = valueText
            case ":authority":
                guard authority == nil, nghttp2_check_authority(value.baseAddress, value.count) != 0 else { return .malformed }
                authority = valueText
            case ":path":
                guard path == nil, !valueText.isEmpty, nghttp2_check_path(value.baseAddress, value.count) != 0 else { return .malformed }
                path = valueText
            default: return .malformed
            }
        } else {
            sawRegularField = true
            let nameText = String(decoding: name, as: UTF8.self)
            guard !HTTP2FieldRules.isConnectionSpecific(nameText), nameText != "te" || valueText == "trailers",
                  let fieldName = HTTPField.Name(nameText) else { return .malformed }
            fields.append(HTTPField(name: fieldName, value: valueText))
        }
        return .accepted
    }

    /// The header block ended: the request head, or nil when a required pseudo-header field is missing.
    mutating func headersComplete() -> HTTPRequest? {
        // CONNECT is not served: every request needs all three.
        guard let method, scheme != nil, path != nil, method != .connect, !headersTooLarge else { return nil }
        let request = HTTPRequest(method: method, scheme: scheme, authority: authority, path: path, headerFields: fields)
        head = request
        fields = HTTPFields()
        return request
    }

    /// Whether the declared `content-length` is over `maxBody`.
    func declaresMoreThan(_ maxBody: Int) -> Bool {
        guard let length = head?.headerFields[.contentLength].flatMap(Int.init) else { return false }
        return length > maxBody
    }

    /// Whether the body received (`bodyBytes`, or none yet) disagrees with a declared `content-length`
    /// (RFC 9113 §8.1.1: malformed).
    func lengthMismatch(bodyBytes: Int) -> Bool {
        guard let declared = head?.headerFields[.contentLength] else { return false }
        return Int(declared) != bodyBytes
    }

    /// Adds body bytes; false when the body is now over `maxBody` (it is then dropped, and so is
    /// anything after it).
    mutating func append(_ bytes: UnsafeRawBufferPointer, maxBody: Int) -> Bool {
        guard !refused else { return true }
        guard body.readableBytes + bytes.count <= maxBody else {
            refused = true
            body = ByteBuffer()
            return false
        }
        body.writeBytes(bytes)
        return true
    }
}
