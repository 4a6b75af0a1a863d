import Foundation
import GlimpseRPC
import GlimpseServing
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle

/// Builds the Hummingbird application that serves Glimpse.
public enum GlimpseServer {
    /// The application: JSON-RPC on `POST /rpc`, REST classify, health, readiness and metrics, over
    /// h2c (HTTP/2 prior knowledge) and HTTP/1.1 on one port.
    public static func makeApplication(
        configuration: ServerConfiguration,
        service: InferenceService,
        dispatcher: RPCDispatcher,
        state: ServerState = ServerState(),
        metricsText: (@Sendable () -> [UInt8])? = nil,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in },
        logger: Logger = Logger(label: "glimpse.server")
    ) throws -> some ApplicationProtocol {
        try configuration.http2.validate()
        var tls: NIOSSLContext?
        if let files = configuration.tls {
            tls = try makeTLSContext(files)
        }
        let router = Router()
        Routes.add(to: router, configuration: configuration, service: service, dispatcher: dispatcher,
                   state: state, metricsText: metricsText)
        let timeouts = ConnectionTimeouts(header: .nanoseconds(Int64(configuration.headerTimeoutSeconds * 1e9)),
                                          idle: .nanoseconds(Int64(configuration.idleTimeoutSeconds * 1e9)),
                                          gracefulClose: .nanoseconds(Int64(configuration.gracefulCloseTimeoutSeconds * 1e9)))
        let frames = GlimpseHTTPChannel.FrameServing(responder: router.buildResponder(), inline: InlineRoutes(service: service, state: state),
                                                     rpc: RPCRoute(configuration: configuration, dispatcher: dispatcher),
                                                     maxBody: configuration.maxBodyBytes, logger: logger)
        return Application(
            router: router,
            server: .glimpse(http2: configuration.http2, tls: tls, timeouts: timeouts, frames: frames,
                             http1ConnectionTasks: configuration.http1ConnectionTasks),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "glimpse"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
            eventLoopGroupProvider: configuration.eventLoopThreads.map { .shared(MultiThreadedEventLoopGroup(numberOfThreads: max(1, $0))) }
                ?? .singleton,
            logger: logger
        )
    }

    /// A server TLS context offering ALPN h2 then http/1.1. Errors name the file, never key material.
    static func makeTLSContext(_ files: TLSFiles) throws -> NIOSSLContext {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(files.certificateChain)
        } catch {
            throw ConfigurationError("cannot read a PEM certificate chain from \(files.certificateChain): \(error)")
        }
        guard !chain.isEmpty else { throw ConfigurationError("no certificate in \(files.certificateChain)") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: files.privateKey, format: .pem)
        } catch {
            throw ConfigurationError("cannot read a PEM private key from \(files.privateKey): \(error)")
        }
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        tls.applicationProtocols = ["h2", "http/1.1"]
        tls.minimumTLSVersion = .tlsv12
        do {
            return try NIOSSLContext(configuration: tls)
        } catch {
            throw ConfigurationError("the TLS certificate and key do not work together: \(error)")
        }
    }

    /// The JSON-RPC dispatcher with Glimpse's methods, recording each call's outcome in metrics.
    public static func makeDispatcher(service: InferenceService, configuration: ServerConfiguration,
                                      logger: Logger = Logger(label: "glimpse.rpc")) -> RPCDispatcher {
        let table = GlimpseMethods.table(service: service, modelDirectory: configuration.modelDirectory)
        let known = Set(table.keys).union(["v2.infer"])
        return RPCDispatcher(methods: table, adminMethods: GlimpseMethods.adminMethods,
                             maxBatchLength: configuration.maxBatchLength, logger: logger,
                             classify: ClassifyFastPath(service: service)) { call in
            RPCMetrics.record(call, known: known, registry: service.registry, into: service.metrics)
        }
    }
}

/// Shared run-time state of the front door (readiness).
public final class ServerState: @unchecked Sendable {
    private let lock = NSLock()
    private var _draining = false
    public init() {}
    public var draining: Bool {
        get { lock.lock(); defer { lock.unlock() }; return _draining }
        set { lock.lock(); _draining = newValue; lock.unlock() }
    }
}
