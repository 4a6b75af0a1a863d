import ArgumentParser
import Foundation
import GlimpseEngine
import GlimpseImage
import GlimpseRPC
import GlimpseServer
import GlimpseServing
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import UnixSignals

private func zip2<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the classification service (HTTP/2 and HTTP/1.1 on one port, clear text or TLS).")

    @Option(help: "Address to listen on.") var host: String = "127.0.0.1"
    @Option(help: "Port to listen on (0 picks a free port).") var port: Int = 8080
    @OptionGroup var modelOptions: ModelOptions
    @Option(help: "Largest batch the batching queue forms.") var maxBatch: Int = 8
    @Option(help: "Longest wait in ms for a batch to fill.") var maxQueueDelayMs: Double = 2
    @Option(help: "Most requests waiting per model before refusing with queue_full.") var maxQueue: Int = 256
    @Option(help: "Refuse with queue_full a request whose predicted wait in the queue is longer than this (ms), however short the queue.")
    var maxQueueWaitMs: Double = 2000
    @Option(help: "Batch delay policy: adaptive (wait only when more requests are arriving) or fixed.") var batchPolicy: String = "adaptive"
    @Option(help: "Comma-separated batch sizes the queue may form (e.g. 1,4,8); default: any up to --max-batch.") var batchSizes: String?
    @Option(help: "Batch workers per model (default: 2, or 1 with --threads 1). With several, a batch that runs alone with nothing waiting uses all engine threads (lowest latency) and busy workers keep to one thread each (best throughput); measured on 2 cores, see BENCHMARKS.md.") var workers: Int?
    @Option(help: "Share of each deadline_ms kept back for reading the request, writing the answer, transport and prediction error; the queue plans to answer within the rest (measured: 0.2 keeps the p99 of answers within the deadline at 2x overload, see BENCHMARKS.md).") var deadlineHeadroom: Double = 0.2
    @Option(help: "Largest request body in bytes.") var maxBody: Int = 16 << 20
    @Option(help: "Largest encoded image in bytes.") var maxImageBytes: Int = 16 << 20
    @Option(help: "Most pixels an image may declare in its header (checked before decoding).") var maxImagePixels: Int = 100_000_000
    @Option(help: DCTScaling.optionHelp) var jpegDctScaling: String = "powers-of-two"
    @Option(help: "Most images in one classify call.") var maxImagesPerCall: Int = 64
    @Option(help: "Most MiB the loaded models may hold together (weights and execution plans, as models.list reports them); a load that would go over is refused. Default: no limit.") var memoryBudget: Int?
    @Option(name: [.customLong("default-model"), .customLong("default-family")],
            help: "The family (or variant) that serves a classify without \"model\" (or with \"model\": \"auto\"). When it is not loaded and only one family is, that family serves.")
    var defaultModel: String = "imagenet"
    @Option(help: "How a family's variants share its requests: split (the most accurate variant up to its capacity, the excess to lighter ones) or switch (one variant at a time, all or nothing).") var selection: String = "split"
    @Option(help: "Share of the cores' time the split keeps free: it plans as if arrivals were 1/(1 - margin) times the measured rate. Below 0 (down to -0.5) it plans the cores beyond its estimate, to measure how far the split can go (tools/bench-variants/ceiling.py).") var splitMargin: Double = 0.02
    @Option(help: "A batch alone on the machine uses all engine threads (lower latency, more CPU) only while fewer than this share of the recent batches began beside another: 1 always, 0 never.") var parallelMaxOverlap: Double = 0.2
    @Option(help: "Longest JSON-RPC batch array.") var maxBatchCalls: Int = 256
    @Option(help: "Seconds allowed for the TLS handshake / h2c preface and the first HTTP/1.1 request head.") var headerTimeoutS: Double = 10
    @Option(help: "Seconds a connection may sit with no request before it is closed.") var idleTimeoutS: Double = 120
    @Option(help: "HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS.") var http2MaxStreams: Int = 128
    @Option(help: "HTTP/2 SETTINGS_INITIAL_WINDOW_SIZE in bytes (per stream receive window).") var http2InitialWindow: Int = 1 << 20
    @Option(help: "HTTP/2 receive window of a whole connection, in bytes.") var http2ConnectionWindow: Int = 8 << 20
    @Option(help: "HTTP/2 SETTINGS_MAX_FRAME_SIZE in bytes (16384 to 16777215).") var http2MaxFrame: Int = 1 << 14
    @Option(help: "HTTP/2 SETTINGS_MAX_HEADER_LIST_SIZE in bytes.") var http2MaxHeaderList: Int = 16 << 10
    @Flag(help: "Serve each HTTP/2 stream on its own child channel and task (the earlier transport, kept for comparison; slower).")
    var http2StreamChannels = false
    @Option(help: "HTTP/2 implementation: nio (swift-nio-http2) or nghttp2 (libnghttp2). Default: $GLIMPSE_HTTP2_TRANSPORT, else nio. --http2-stream-channels serves with nio whatever this says.")
    var http2Transport: String = ProcessInfo.processInfo.environment["GLIMPSE_HTTP2_TRANSPORT"].flatMap { $0.isEmpty ? nil : $0 } ?? "nio"
    @Flag(help: "Read each HTTP/1.1 connection in its own task through Hummingbird (the earlier transport, kept for comparison; slower).")
    var http1ConnectionTasks = false
    @Option(help: "PEM certificate chain; with --tls-key the port speaks TLS (ALPN h2 and http/1.1).") var tlsCert: String?
    @Option(help: "PEM private key of --tls-cert.") var tlsKey: String?
    @Option(help: "File of API keys, one `<key> <user|admin> [name]` per line; clients send `Authorization: Bearer <key>`.") var apiKeys: String?
    @Flag(help: "Without --api-keys, open the admin methods (models.load, models.reload, models.unload, models.traffic) to whoever reaches the port. Off by default: they are refused with -32003.")
    var adminWithoutAuth = false
    @Option(help: "Seconds to wait on SIGTERM/SIGINT for in-flight requests before cancelling them.") var drainTimeoutS: Double = 30
    @Option(help: "Seconds between SIGTERM/SIGINT and the drain: /readyz answers 503 while requests are still served, so a load balancer's health check moves traffic away before the port closes. A second signal starts the drain at once.")
    var drainDelayS: Double = 0
    @Option(help: "Watts attributed to one busy core when RAPL is not readable (energy estimate).") var wattsPerCore: Double = 4
    @Option(help: "Log level: trace, debug, info, notice, warning, error.") var logLevel: String = "info"

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = Logger.Level(rawValue: logLevel) ?? .info
            return handler
        }
        let logger = Logger(label: "glimpse")
        // Large blocks (model weights, plans) mapped on their own, so unloaded models give memory back.
        HeapPolicy.fixMmapThreshold()
        let prometheus = PrometheusExport()
        let metrics = prometheus.bootstrap()
        let energy = EnergyMeter(wattsPerCore: wattsPerCore)
        let sampler = ProcessSampler(energy: energy, metrics: metrics)
        logger.info("kernels: \(EngineInfo.isa) (CPU: \(EngineInfo.cpuFeatures); this binary has \(EngineInfo.compiledISAs.joined(separator: ", ")); GLIMPSE_ISA chooses a lower one)")
        Gauge(label: GlimpseMetrics.buildInfo, dimensions: [("isa", EngineInfo.isa)]).record(1)
        logger.info("energy meter: \(energy.source == .rapl ? "RAPL package energy" : "estimate, \(wattsPerCore) W per busy core (no readable RAPL in /sys/class/powercap)")")

        let serving = try servingConfiguration()
        let service = InferenceService(configuration: serving, energy: energy, metrics: metrics, logger: logger)
        let problems = service.registry.loadDirectory(modelOptions.models)
        for problem in problems { logger.warning("model folder: \(problem)") }
        let loaded = service.registry.all
        if loaded.isEmpty {
            logger.warning("no models loaded from \(modelOptions.models): classify will answer 'unknown model'. Point --models at a folder of .onnx files with metadata (e.g. --models ../shared/models).")
        } else {
            logger.info("serving models: \(loaded.map(\.name).joined(separator: ", "))")
        }

        let config = try serverConfiguration()
        if config.apiKeys == nil {
            logger.notice(adminWithoutAuth
                ? "no --api-keys and --admin-without-auth: every method, admin ones included, is open to whoever reaches the port"
                : "no --api-keys: classify and the read-only methods are open; admin methods are refused (give an admin key in --api-keys, or --admin-without-auth)")
        }
        let state = ServerState()
        let scheme = config.tls == nil ? "http" : "https"
        let app = try GlimpseServer.makeApplication(
            configuration: config, service: service,
            dispatcher: GlimpseServer.makeDispatcher(service: service, configuration: config),
            state: state,
            metricsText: {
                sampler.sample()
                return prometheus.render()
            },
            onServerRunning: { port in
                logger.info("listening on \(scheme)://\(host):\(port) (\(scheme == "https" ? "TLS, ALPN h2 and http/1.1" : "h2c prior knowledge and HTTP/1.1"))")
            },
            logger: logger)
        var groupConfig = ServiceGroupConfiguration(
            // Shut down in reverse order: HTTP drains first, then the inference queues.
            services: [.init(service: service), .init(service: app, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        // Clients that keep connections open cannot hold the process forever: after this, the
        // remaining work is cancelled.
        groupConfig.maximumGracefulShutdownDuration = .milliseconds(Int64(drainTimeoutS * 1000))
        groupConfig.maximumCancellationDuration = .seconds(5)
        guard drainDelayS >= 0, drainDelayS <= 3600, drainTimeoutS >= 0, drainTimeoutS <= 86_400 else {
            throw ValidationError("--drain-delay-s must be 0 to 3600 and --drain-timeout-s 0 to 86400")
        }
        if drainDelayS > 0 { groupConfig.gracefulShutdownSignals = [] }
        let group = ServiceGroup(configuration: groupConfig)
        try await withGracefulShutdownHandler {
            if drainDelayS > 0 {
                try await runWithDrainDelay(group, state: state, logger: logger)
            } else {
                try await group.run()
            }
        } onGracefulShutdown: {
            state.draining = true
        }
        logger.info("stopped")
    }

    /// Runs the group with the signals handled here: the first SIGTERM/SIGINT marks the server draining
    /// (`/readyz` 503) and starts the group's graceful shutdown `--drain-delay-s` later; a second one starts it at once.
    private func runWithDrainDelay(_ group: ServiceGroup, state: ServerState, logger: Logger) async throws {
        let delay = drainDelayS
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            tasks.addTask {
                let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
                var delayTask: Task<Void, Never>?
                for await signal in signals {
                    if let pending = delayTask {
                        logger.notice("\(signal) again: draining now")
                        pending.cancel()
                        await group.triggerGracefulShutdown()
                        continue
                    }
                    state.draining = true
                    logger.notice("\(signal): /readyz answers 503; draining in \(delay) s")
                    delayTask = Task {
                        try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
                        await group.triggerGracefulShutdown()
                    }
                }
            }
            // The group ends (after a drain, or a failure); the signal watcher goes with it.
            try await tasks.next()
            tasks.cancelAll()
        }
    }

    /// The serving options, checked.
    func servingConfiguration() throws -> ServingConfiguration {
        guard let policy: BatchScheduler.DelayPolicy = ["adaptive": .adaptive, "fixed": .fixed][batchPolicy] else {
            throw ValidationError("--batch-policy must be adaptive or fixed")
        }
        var sizes: [Int]?
        if let batchSizes {
            sizes = batchSizes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard let s = sizes, !s.isEmpty, s.allSatisfy({ $0 >= 1 }) else { throw ValidationError("--batch-sizes takes positive integers, e.g. 1,4,8") }
        }
        // --threads bounds the cores a process uses: engine threads, busy batch workers (one thread each under
        // load) and image decoding, so replicas that share a machine (scripts/cluster.sh) share its cores.
        let threads = max(1, modelOptions.threads)
        let workers = self.workers ?? min(2, threads)
        guard maxBatch >= 1, maxQueue >= 1, workers >= 1, maxQueueDelayMs >= 0, maxImageBytes >= 1, maxImagePixels >= 1 else {
            throw ValidationError("--max-batch, --max-queue and --workers must be at least 1, --max-queue-delay-ms at least 0")
        }
        guard maxQueueWaitMs >= 1, maxQueueWaitMs <= 3_600_000 else { throw ValidationError("--max-queue-wait-ms must be from 1 to 3600000") }
        let dctScaling = try DCTScaling(option: jpegDctScaling)
        guard let selectionMode = SelectionMode(rawValue: selection) else { throw ValidationError("--selection must be split or switch") }
        guard splitMargin >= -0.5, splitMargin < 1 else { throw ValidationError("--split-margin must be at least -0.5 and below 1") }
        guard parallelMaxOverlap >= 0, parallelMaxOverlap <= 1 else { throw ValidationError("--parallel-max-overlap must be from 0 to 1") }
        var serving = ServingConfiguration(
            decodeThreads: min(threads, ProcessInfo.processInfo.activeProcessorCount),
            engineThreads: threads,
            workersPerModel: workers,
            batching: .init(maxBatchSize: maxBatch, maxQueueDelayNanos: UInt64(maxQueueDelayMs * 1e6), maxQueueLength: maxQueue,
                            allowedBatchSizes: sizes, delayPolicy: policy, maxPredictedWaitNanos: UInt64(maxQueueWaitMs * 1e6)),
            imageLimits: ImageLimits(maxEncodedBytes: maxImageBytes, maxPixels: maxImagePixels),
            maxImagesPerCall: maxImagesPerCall, defaultModel: defaultModel.isEmpty ? nil : defaultModel, deadlineHeadroom: deadlineHeadroom,
            decodeOptions: DecodeOptions(dctScaling: dctScaling), selection: selectionMode, splitMargin: splitMargin,
            parallelMaxOverlap: parallelMaxOverlap)
        serving.modelKeys = try modelOptions.keys.keyring()
        if let memoryBudget {
            guard memoryBudget >= 1 else { throw ValidationError("--memory-budget is in MiB and must be at least 1") }
            serving.memoryBudgetBytes = memoryBudget << 20
        }
        return serving
    }

    /// The front-door options, checked.
    func serverConfiguration() throws -> ServerConfiguration {
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        guard maxImagesPerCall >= 1, maxBatchCalls >= 1, headerTimeoutS > 0, idleTimeoutS > 0 else {
            throw ValidationError("--max-images-per-call and --max-batch-calls must be at least 1, timeouts above 0")
        }
        var http2 = HTTP2Options()
        http2.maxConcurrentStreams = http2MaxStreams
        http2.initialWindowSize = http2InitialWindow
        http2.connectionWindowSize = http2ConnectionWindow
        http2.maxFrameSize = http2MaxFrame
        http2.maxHeaderListSize = http2MaxHeaderList
        http2.streamChannels = http2StreamChannels
        guard let transport = HTTP2Transport(rawValue: http2Transport) else {
            throw ValidationError("--http2-transport must be one of \(HTTP2Transport.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        http2.transport = transport
        var configuration = ServerConfiguration(
            host: host, port: port, maxBodyBytes: maxBody, maxBatchLength: maxBatchCalls,
            idleTimeoutSeconds: idleTimeoutS, headerTimeoutSeconds: headerTimeoutS, gracefulCloseTimeoutSeconds: drainTimeoutS,
            http2: http2, tls: zip2(tlsCert, tlsKey).map { TLSFiles(certificateChain: $0, privateKey: $1) },
            apiKeys: try apiKeys.map { try APIKeys(file: $0) }, modelDirectory: modelOptions.models,
            adminWithoutAuth: adminWithoutAuth)
        // With fewer --threads than cores, the HTTP event loops keep to that many too.
        let cores = ProcessInfo.processInfo.activeProcessorCount
        if modelOptions.threads < cores { configuration.eventLoopThreads = max(1, modelOptions.threads) }
        configuration.http1ConnectionTasks = http1ConnectionTasks
        return configuration
    }
}

extension DCTScaling {
    static let optionHelp: ArgumentHelp = "JPEG DCT scaling before the resize: powers-of-two (1/2, 1/4, 1/8, as Pillow's draft(); fast on large photos), eighths (any n/8, a little faster still) or off (full decode: the input tensor is bit-identical with the Pillow reference preprocessing)."

    /// The command-line spelling of a policy (`--jpeg-dct-scaling`).
    init(option: String) throws {
        switch option {
        case "powers-of-two": self = .powersOfTwo
        case "eighths": self = .eighths
        case "off": self = .off
        default: throw ValidationError("--jpeg-dct-scaling must be powers-of-two, eighths or off, not '\(option)'")
        }
    }
}
