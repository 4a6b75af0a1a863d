import HTTPTypes
import NIOCore

/// One request arriving on an nghttp2 stream: its header fields as the session decodes them, then
/// its body. A pure value: `NGHTTP2Responder` feeds it and carries out what it reports.
///
/// nghttp2 has already checked the header block against HTTP's rules (pseudo-header fields first
/// and as required, lowercase names, no connection-specific fields, a `content-length` that agrees
/// with the body), but does not bound its size: that is `maxHeaderListSize`'s job here
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
        let valueText = String(decoding: value, as: UTF8.self)
        if name.first == UInt8(ascii: ":") {
            switch String(decoding: name, as: UTF8.self) {
            case ":method":
                guard let m = HTTPRequest.Method(valueText) else { return .malformed }
                method = m
            case ":scheme": scheme = valueText
            case ":authority": authority = valueText
            case ":path": path = valueText
            default: return .malformed
            }
        } else {
            guard let fieldName = HTTPField.Name(String(decoding: name, as: UTF8.self)) else { return .malformed }
            fields.append(HTTPField(name: fieldName, value: valueText))
        }
        return .accepted
    }

    /// The header block ended: the request head, or nil without a method (nghttp2 resets such a
    /// stream itself; this is the second line of defence).
    mutating func headersComplete() -> HTTPRequest? {
        guard let method, !headersTooLarge else { return nil }
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
