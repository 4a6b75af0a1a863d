import Foundation
import GlimpseRPC
import GlimpseServing
import Hummingbird
import HummingbirdHTTP2
import Logging
import NIOCore
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
    ) -> some ApplicationProtocol {
        let router = Router()
        Routes.add(to: router, configuration: configuration, service: service, dispatcher: dispatcher,
                   state: state, metricsText: metricsText)
        return Application(
            router: router,
            server: .cleartextHTTP1AndHTTP2(
                http1: .init(idleTimeout: .seconds(Int64(configuration.idleTimeoutSeconds))),
                http2: .init(idleTimeout: .seconds(Int64(configuration.idleTimeoutSeconds)), gracefulCloseTimeout: .seconds(10))),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "glimpse"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
            logger: logger
        )
    }

    /// The JSON-RPC dispatcher with Glimpse's methods, recording each call's outcome in metrics.
    public static func makeDispatcher(service: InferenceService, configuration: ServerConfiguration,
                                      logger: Logger = Logger(label: "glimpse.rpc")) -> RPCDispatcher {
        let table = GlimpseMethods.table(service: service)
        let known = Set(table.keys)
        return RPCDispatcher(methods: table, maxBatchLength: configuration.maxBatchLength, logger: logger) { method, error in
            RPCMetrics.record(method: method, error: error, known: known)
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
