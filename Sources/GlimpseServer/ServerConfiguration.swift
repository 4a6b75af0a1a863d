/// Settings of the HTTP front door.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// Largest request body, enforced while the body streams in.
    public var maxBodyBytes: Int
    /// Longest JSON-RPC batch array.
    public var maxBatchLength: Int
    /// Connections with no request for this long are closed.
    public var idleTimeoutSeconds: Int

    public init(host: String = "127.0.0.1", port: Int = 8080, maxBodyBytes: Int = 16 << 20, maxBatchLength: Int = 256,
                idleTimeoutSeconds: Int = 120) {
        self.idleTimeoutSeconds = max(1, idleTimeoutSeconds)
        self.host = host
        self.port = port
        self.maxBodyBytes = maxBodyBytes
        self.maxBatchLength = maxBatchLength
    }
}
