import HTTPTypes

/// Field rules both HTTP/2 transports apply.
enum HTTP2FieldRules {
    /// Connection-specific fields, which HTTP/2 forbids (RFC 9113 §8.2.2): dropped from responses,
    /// malformed in requests. Told apart by length first, so most names cost one comparison at most.
    static func isConnectionSpecific(_ name: String) -> Bool {
        switch name.utf8.count {
        case 7: return name == "upgrade"
        case 10: return name == "connection" || name == "keep-alive"
        case 16: return name == "proxy-connection"
        case 17: return name == "transfer-encoding"
        default: return false
        }
    }

    /// Whether HPACK should add a response field to the connection's dynamic table. Not for fields
    /// whose value changes from response to response (`content-length`, `age`) or is unique to a
    /// resource (`etag`, `last-modified`, `location`, `set-cookie`): each would take a new entry that
    /// no later response matches, and push out the ones that do (`content-type`, `server`), since
    /// the table evicts its oldest entries first. swift-nio-http2's encoder searches its dynamic
    /// table entry by entry for every field it may index, so a table full of old lengths cost about
    /// 2,000 instructions per field. `date` is indexed: one entry a second serves every response of
    /// that second, and written literally it is Huffman-coded each time (about 7,000 instructions a
    /// response). RFC 7541 §7.1 and libnghttp2's encoder make the same choice for lengths.
    static func isWorthIndexing(_ name: String) -> Bool {
        switch name.utf8.count {
        case 3: return name != "age"
        case 4: return name != "etag"
        case 8: return name != "location"
        case 10: return name != "set-cookie"
        case 13: return name != "last-modified"
        case 14: return name != "content-length"
        default: return true
        }
    }

    /// A response's header fields as HTTP/2 sends them, after `:status`: the route's, less the
    /// connection-specific ones, then the server's defaults the route did not set
    /// (`forEachDefaultField`), without building a second `HTTPFields`.
    static func forEachResponseField(_ head: HTTPResponse, bodyBytes: Int, _ body: (String, String) -> Void) {
        for field in head.headerFields {
            let name = field.name.canonicalName
            if !isConnectionSpecific(name) { body(name, field.value) }
        }
        forEachDefaultField(head, bodyBytes: bodyBytes) { body($0.canonicalName, $1) }
    }

    /// The fields every response carries that `head` lacks: `content-length`, `date` (RFC 9110 §6.6.1:
    /// an origin server with a clock sends one) and `server`. One pass over the fields: a look-up by
    /// name in `HTTPFields` builds their index first (about 4,000 instructions a response).
    static func forEachDefaultField(_ head: HTTPResponse, bodyBytes: Int, _ body: (HTTPField.Name, String) -> Void) {
        var hasLength = false, hasDate = false, hasServer = false
        for field in head.headerFields {
            switch field.name {
            case .contentLength: hasLength = true
            case .date: hasDate = true
            case .server: hasServer = true
            default: break
            }
        }
        if !hasLength { body(.contentLength, String(bodyBytes)) }
        if !hasDate { body(.date, HTTPDate.now) }
        if !hasServer { body(.server, "glimpse") }
    }
}
