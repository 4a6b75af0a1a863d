import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// An OpenSSL client context (`SSL_CTX`), built once and shared by the connections of a run: the trust
/// store is loaded once, not per connection. It is not changed after `init`, so connections on any
/// thread may use it. Freed in `deinit`.
public final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer
    public let options: TLSOptions

    /// ALPN protocol list in wire format: only "h2".
    private static let alpn: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]

    public init(_ options: TLSOptions = TLSOptions()) throws {
        self.options = options
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw H2Error(.tls, detail: "SSL_CTX_new: \(openSSLErrorText())")
        }
        do {
            try TLSContext.configure(context, options)
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        self.context = context
    }

    deinit { SSL_CTX_free(context) }

    private static func configure(_ context: OpaquePointer, _ options: TLSOptions) throws {
        // HTTP/2 requires TLS 1.2 or later (RFC 9113 section 9.2).
        guard glimpse_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw H2Error(.tls, detail: "cannot require TLS 1.2: \(openSSLErrorText())")
        }
        // A write retried after WANT_WRITE may come from a buffer that has moved (same bytes).
        _ = glimpse_SSL_CTX_set_mode(context, Int(SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        guard SSL_CTX_set_alpn_protos(context, alpn, UInt32(alpn.count)) == 0 else {  // 0 is success here
            throw H2Error(.tls, detail: "cannot set ALPN: \(openSSLErrorText())")
        }
        if let file = options.caFile {
            guard access(file, R_OK) == 0 else {
                throw H2Error(.tls, detail: "cannot read CA file \(file): \(String(cString: strerror(errno)))")
            }
            guard SSL_CTX_load_verify_locations(context, file, nil) == 1 else {
                throw H2Error(.tls, detail: "cannot load CA certificates from \(file): \(openSSLErrorText())")
            }
        } else if options.verifyCertificate {
            guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                throw H2Error(.tls, detail: "cannot load the system CA store: \(openSSLErrorText())")
            }
        }
        SSL_CTX_set_verify(context, options.verifyCertificate ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nil)
    }
}

/// The reasons on this thread's OpenSSL error queue, oldest first, which empties it (a stale entry would
/// make a later `SSL_get_error` on this thread report a failure).
func openSSLErrorText() -> String {
    var reasons: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        if let reason = ERR_reason_error_string(code) {
            reasons.append(String(cString: reason))
        } else {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(cString: buffer))
        }
    }
    return reasons.isEmpty ? "no detail from OpenSSL" : reasons.joined(separator: "; ")
}
