import NIOHTTP2

/// Settings of the HTTP front door.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// Largest request body, enforced while the body streams in.
    public var maxBodyBytes: Int
    /// Longest JSON-RPC batch array.
    public var maxBatchLength: Int
    /// Connections with no request for this long are closed.
    public var idleTimeoutSeconds: Double
    /// Time allowed for the TLS handshake / h2c preface and for the first HTTP/1.1 request head.
    public var headerTimeoutSeconds: Double
    /// After a drain's final GOAWAY, streams still open after this long are cut off.
    public var gracefulCloseTimeoutSeconds: Double
    /// What the server advertises in its HTTP/2 SETTINGS.
    public var http2: HTTP2Options
    /// PEM certificate chain and private key: when set, the port speaks TLS (ALPN h2, http/1.1) only.
    public var tls: TLSFiles?
    /// API keys; when nil, no authentication is asked for.
    public var apiKeys: APIKeys?
    /// Without API keys, whether the admin methods (`models.load`, `.reload`, `.unload`, `.traffic`) are
    /// open to every caller. Off by default: they are refused with -32003 unless an admin key is configured.
    public var adminWithoutAuth: Bool
    /// Folder `models.load` loads from.
    public var modelDirectory: String?
    /// Event-loop threads of the HTTP server; nil: NIO's shared group, one per core.
    public var eventLoopThreads: Int?
    /// Read each HTTP/1.1 connection in a task through Hummingbird's HTTP handling (the earlier
    /// transport, kept for comparison). Off: `HTTP1Responder` answers in the connection's pipeline.
    public var http1ConnectionTasks = false

    public init(host: String = "127.0.0.1", port: Int = 8080, maxBodyBytes: Int = 16 << 20, maxBatchLength: Int = 256,
                idleTimeoutSeconds: Double = 120, headerTimeoutSeconds: Double = 10, gracefulCloseTimeoutSeconds: Double = 30,
                http2: HTTP2Options = .init(), tls: TLSFiles? = nil, apiKeys: APIKeys? = nil, modelDirectory: String? = nil,
                adminWithoutAuth: Bool = false) {
        self.adminWithoutAuth = adminWithoutAuth
        self.modelDirectory = modelDirectory
        self.host = host
        self.port = port
        self.maxBodyBytes = maxBodyBytes
        self.maxBatchLength = maxBatchLength
        self.idleTimeoutSeconds = max(0.05, idleTimeoutSeconds)
        self.headerTimeoutSeconds = max(0.05, headerTimeoutSeconds)
        self.gracefulCloseTimeoutSeconds = max(0.05, gracefulCloseTimeoutSeconds)
        self.http2 = http2
        self.tls = tls
        self.apiKeys = apiKeys
    }
}

/// Where the TLS certificate chain and key are (PEM files).
public struct TLSFiles: Sendable {
    public var certificateChain: String
    public var privateKey: String
    public init(certificateChain: String, privateKey: String) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }
}

/// HTTP/2 settings the server advertises (RFC 9113 §6.5.2), and the receive windows it keeps.
public struct HTTP2Options: Sendable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS: requests one connection may have in flight.
    public var maxConcurrentStreams: Int = 128
    /// SETTINGS_INITIAL_WINDOW_SIZE: bytes a client may send on one stream before a WINDOW_UPDATE.
    /// 1 MiB lets a typical photo upload go out in one round trip (the protocol default is 64 KiB).
    public var initialWindowSize: Int = 1 << 20
    /// Receive window of the whole connection.
    public var connectionWindowSize: Int = 8 << 20
    /// SETTINGS_MAX_FRAME_SIZE: largest frame payload accepted.
    public var maxFrameSize: Int = 1 << 14
    /// SETTINGS_MAX_HEADER_LIST_SIZE: largest decoded header block accepted.
    public var maxHeaderListSize: Int = 16 << 10
    /// Serve each stream on its own child channel and task, through Hummingbird's HTTP handling (the
    /// earlier transport, kept for comparison). Off: `HTTP2FrameResponder` answers from the
    /// connection's frames.
    public var streamChannels = false
    /// The HTTP/2 implementation that serves connections (without `streamChannels`).
    public var transport: HTTP2Transport = .nio

    public init() {}

    /// Checks each value against the protocol's bounds.
    public func validate() throws {
        func check(_ ok: Bool, _ message: String) throws { if !ok { throw ConfigurationError(message) } }
        try check(maxConcurrentStreams >= 1 && maxConcurrentStreams <= 1 << 20, "HTTP/2 max concurrent streams must be between 1 and 1048576")
        try check(initialWindowSize >= 1 && initialWindowSize <= Int(Int32.max), "HTTP/2 initial window size must be between 1 and 2^31-1")
        try check(connectionWindowSize >= 65_535 && connectionWindowSize <= Int(Int32.max), "HTTP/2 connection window must be between 65535 and 2^31-1")
        try check(maxFrameSize >= 1 << 14 && maxFrameSize <= (1 << 24) - 1, "HTTP/2 max frame size must be between 16384 and 16777215")
        try check(maxHeaderListSize >= 1024, "HTTP/2 max header list size must be at least 1024")
    }

    var handlerConfiguration: NIOHTTP2Handler.Configuration {
        var c = NIOHTTP2Handler.Configuration()
        c.connection.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams),
            HTTP2Setting(parameter: .initialWindowSize, value: initialWindowSize),
            HTTP2Setting(parameter: .maxFrameSize, value: maxFrameSize),
            HTTP2Setting(parameter: .maxHeaderListSize, value: maxHeaderListSize),
        ]
        c.connection.targetWindowSize = connectionWindowSize
        c.stream.targetWindowSize = initialWindowSize
        return c
    }
}

/// Which HTTP/2 implementation serves a connection.
public enum HTTP2Transport: String, Sendable, CaseIterable {
    /// swift-nio-http2: `NIOHTTP2Handler`, `HTTP2ConnectionManager` and `HTTP2FrameResponder`.
    case nio
    /// libnghttp2: `NGHTTP2Responder`.
    case nghttp2
}

public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
