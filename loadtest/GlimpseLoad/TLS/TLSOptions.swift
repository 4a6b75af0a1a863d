/// How a connection speaks TLS: HTTP/2 over TLS 1.2 or later, with ALPN offering only "h2".
public struct TLSOptions: Sendable, Equatable {
    /// Verify the server's certificate chain and that it names the host (the default). false accepts any
    /// certificate (`--insecure`).
    public var verifyCertificate: Bool
    /// A PEM file of CA certificates, or the server's own self-signed certificate, trusted instead of the
    /// system store (`--cacert`).
    public var caFile: String?

    public init(verifyCertificate: Bool = true, caFile: String? = nil) {
        self.verifyCertificate = verifyCertificate
        self.caFile = caFile
    }
}
