import ArgumentParser
import Foundation
import GlimpseRPC
import GlimpseServer
import GlimpseServing
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the classification service (h2c and HTTP/1.1 on one port).")

    @Option(help: "Address to listen on.") var host: String = "127.0.0.1"
    @Option(help: "Port to listen on (0 picks a free port).") var port: Int = 8080
    @OptionGroup var modelOptions: ModelOptions
    @Option(help: "Largest batch the batching queue forms.") var maxBatch: Int = 8
    @Option(help: "Longest wait in ms for a batch to fill.") var maxQueueDelayMs: Double = 2
    @Option(help: "Most requests waiting per model before refusing with queue_full.") var maxQueue: Int = 256
    @Option(help: "Largest request body in bytes.") var maxBody: Int = 16 << 20
    @Option(help: "Log level: trace, debug, info, notice, warning, error.") var logLevel: String = "info"

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = Logger.Level(rawValue: logLevel) ?? .info
            return handler
        }
        let logger = Logger(label: "glimpse")
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

        let serving = ServingConfiguration(
            engineThreads: modelOptions.threads,
            batching: .init(maxBatchSize: maxBatch, maxQueueDelayNanos: UInt64(maxQueueDelayMs * 1e6), maxQueueLength: maxQueue))
        let service = InferenceService(configuration: serving, logger: logger)
        let problems = service.registry.loadDirectory(modelOptions.models)
        for problem in problems { logger.warning("model folder: \(problem)") }
        let loaded = service.registry.all
        if loaded.isEmpty {
            logger.warning("no models loaded from \(modelOptions.models): classify will answer 'unknown model'. Point --models at a folder of .onnx files with metadata (e.g. --models ../shared/models).")
        } else {
            logger.info("serving models: \(loaded.map(\.name).joined(separator: ", "))")
        }

        let config = ServerConfiguration(host: host, port: port, maxBodyBytes: maxBody)
        let state = ServerState()
        let app = GlimpseServer.makeApplication(
            configuration: config, service: service,
            dispatcher: GlimpseServer.makeDispatcher(service: service, configuration: config),
            state: state,
            metricsText: { registry.emitToBuffer() },
            onServerRunning: { port in logger.info("listening on http://\(host):\(port) (h2c prior knowledge and HTTP/1.1)") },
            logger: logger)
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: app, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await withGracefulShutdownHandler {
            try await group.run()
        } onGracefulShutdown: {
            state.draining = true
        }
        service.shutdown()
        logger.info("stopped")
    }
}
