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
}
