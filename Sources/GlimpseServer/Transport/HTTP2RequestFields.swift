import CNGHTTP2
import HTTPTypes
import NIOHPACK

/// A request's header block, field by field, under the rules of RFC 9113 §8.2 and §8.3: valid
/// lowercase names, values without NUL, CR, LF or surrounding white space, pseudo-header fields
/// first, once each and as required, no connection-specific fields, `te` only as "trailers",
/// `content-length` as digits (its body checked by the caller, §8.1.1). The header list is bounded
/// by `limit` (RFC 9113 §6.5.2: each field counts its name, its value and 32 bytes). Both HTTP/2
/// transports check requests with it: the libnghttp2 session runs without nghttp2's messaging checks,
/// and swift-nio-http2 without its header block and content-length validation, which walked every
/// request and response block a second time (about 30,000 instructions a mnist-8 call, callgrind).
struct HTTP2RequestFields {
    enum FieldResult: Equatable {
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
    private(set) var tooLarge = false
    /// The `content-length` the request declares (read here, as its field goes by, rather than looked
    /// up in its `HTTPFields` afterwards, which builds their index: 4,000 instructions a look-up).
    private(set) var contentLength: Int?

    /// One field, as bytes.
    mutating func field(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, limit: Int) -> FieldResult {
        field(name: name, value: value, limit: limit,
              nameText: String(decoding: name, as: UTF8.self), valueText: String(decoding: value, as: UTF8.self))
    }

    /// One field that is already a pair of strings (swift-nio-http2's decoded block): the strings
    /// are kept rather than made again from their bytes.
    mutating func field(_ name: String, _ value: String, limit: Int) -> FieldResult {
        Self.withBytes(name, value) { nb, vb in field(name: nb, value: vb, limit: limit, nameText: name, valueText: value) }
    }

    /// The UTF-8 bytes of a name and a value: in place for native strings, copied otherwise.
    @inline(__always)
    private static func withBytes<R>(_ name: String, _ value: String,
                                     _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> R) -> R {
        let direct = name.utf8.withContiguousStorageIfAvailable { nb in value.utf8.withContiguousStorageIfAvailable { vb in body(nb, vb) } }
        if let result = direct ?? nil { return result }
        var n = name, v = value
        return n.withUTF8 { nb in v.withUTF8 { vb in body(nb, vb) } }
    }

    /// Room for `count` regular fields.
    mutating func reserveCapacity(_ count: Int) {
        fields.reserveCapacity(count)
    }

    @inline(__always)
    private mutating func field(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, limit: Int,
                                nameText: @autoclosure () -> String, valueText: @autoclosure () -> String) -> FieldResult {
        headerListSize += name.count + value.count + 32
        if tooLarge || headerListSize > limit {
            tooLarge = true
            fields = HTTPFields()
            return .tooLarge
        }
        guard nghttp2_check_header_name(name.baseAddress, name.count) != 0,
              nghttp2_check_header_value_rfc9113(value.baseAddress, value.count) != 0 else { return .malformed }
        if name.first == UInt8(ascii: ":") {
            guard !sawRegularField else { return .malformed }
            switch name.count {
            case 5 where Self.equal(name, ":path"):
                guard path == nil, value.count > 0, nghttp2_check_path(value.baseAddress, value.count) != 0 else { return .malformed }
                path = valueText()
            case 7 where Self.equal(name, ":method"):
                guard method == nil, let m = HTTPRequest.Method(valueText()) else { return .malformed }
                method = m
            case 7 where Self.equal(name, ":scheme"):
                guard scheme == nil, value.count > 0 else { return .malformed }
                scheme = valueText()
            case 10 where Self.equal(name, ":authority"):
                guard authority == nil, nghttp2_check_authority(value.baseAddress, value.count) != 0 else { return .malformed }
                authority = valueText()
            default: return .malformed
            }
        } else {
            sawRegularField = true
            if Self.equal(name, "content-length") {
                // RFC 9110 §8.6: digits only; repeated, the same number.
                guard let length = Self.decimal(value), contentLength == nil || contentLength == length else { return .malformed }
                contentLength = length
            }
            let text = nameText()
            guard !HTTP2FieldRules.isConnectionSpecific(text), !Self.equal(name, "te") || Self.equal(value, "trailers"),
                  let fieldName = HTTPField.Name(text) else { return .malformed }
            fields.append(HTTPField(name: fieldName, value: valueText()))
        }
        return .accepted
    }

    /// The header block ended: the request head, or nil when a required pseudo-header field is
    /// missing or the list was too large. CONNECT is not served: every request needs all three of
    /// `:method`, `:scheme` and `:path`.
    mutating func complete() -> HTTPRequest? {
        guard let method, scheme != nil, path != nil, method != .connect, !tooLarge else { return nil }
        let request = HTTPRequest(method: method, scheme: scheme, authority: authority, path: path, headerFields: fields)
        fields = HTTPFields()
        return request
    }

    /// A trailer field: a valid name and value, not a pseudo-header field, not connection-specific.
    static func trailerFieldIsValid(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Bool {
        nghttp2_check_header_name(name.baseAddress, name.count) != 0
            && nghttp2_check_header_value_rfc9113(value.baseAddress, value.count) != 0
            && name.first != UInt8(ascii: ":") && !HTTP2FieldRules.isConnectionSpecific(String(decoding: name, as: UTF8.self))
    }

    /// A trailer block of decoded strings: every field valid (`trailerFieldIsValid`).
    static func trailersAreValid(_ block: HPACKHeaders) -> Bool {
        block.allSatisfy { name, value, _ in withBytes(name, value) { trailerFieldIsValid(name: $0, value: $1) } }
    }

    /// Whether a body of `bodyBytes` disagrees with the declared `content-length` (RFC 9113 §8.1.1:
    /// malformed); none declared, no disagreement.
    func lengthMismatch(bodyBytes: Int) -> Bool {
        contentLength.map { $0 != bodyBytes } ?? false
    }

    /// A run of 1 to 18 ASCII digits as a number.
    private static func decimal(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard (1...18).contains(bytes.count) else { return nil }
        var n = 0
        for b in bytes {
            guard b &- UInt8(ascii: "0") < 10 else { return nil }
            n = n &* 10 &+ Int(b &- UInt8(ascii: "0"))
        }
        return n
    }

    @inline(__always)
    private static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        bytes.elementsEqual(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
