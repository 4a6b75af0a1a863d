import HTTPTypes
import NIOCore

/// One request arriving on an nghttp2 stream: its header fields as the session decodes them, then
/// its body. A value: `NGHTTP2Responder` feeds it and carries out what it reports.
///
/// The session runs without nghttp2's HTTP messaging checks, which refuse a request without
/// `:authority` and `host` (HAProxy's HTTP/2 health checks send such requests, which RFC 9113 §8.3.1
/// allows). `HTTP2RequestFields` makes the checks instead, as it does for the swift-nio-http2
/// transport, and the body must be as long as its `content-length`.
struct NGHTTP2IncomingRequest {
    typealias HeaderResult = HTTP2RequestFields.FieldResult

    private var fields = HTTP2RequestFields()
    var headersTooLarge: Bool { fields.tooLarge }
    /// The request head, once its header block is complete.
    private(set) var head: HTTPRequest?
    /// The body so far (empty once `refused`).
    var body = ByteBuffer()
    /// The request was dispatched as too large: the rest of its body is dropped.
    var refused = false

    mutating func header(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, limit: Int) -> HeaderResult {
        fields.field(name: name, value: value, limit: limit)
    }

    /// The header block ended: the request head, or nil when a required pseudo-header field is missing.
    mutating func headersComplete() -> HTTPRequest? {
        head = fields.complete()
        return head
    }

    /// Whether the declared `content-length` is over `maxBody`.
    func declaresMoreThan(_ maxBody: Int) -> Bool {
        guard let length = fields.contentLength else { return false }
        return length > maxBody
    }

    /// Whether the body received (`bodyBytes`, or none yet) disagrees with a declared `content-length`
    /// (RFC 9113 §8.1.1: malformed).
    func lengthMismatch(bodyBytes: Int) -> Bool {
        fields.lengthMismatch(bodyBytes: bodyBytes)
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
