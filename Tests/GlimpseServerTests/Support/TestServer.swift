import Foundation
import GlimpseRPC
import GlimpseServer
import GlimpseServing
import GlimpseTestSupport
import Hummingbird
import Logging
import ServiceLifecycle

/// A real Glimpse server on a loopback port, serving squeezenet1.1, mobilenetv2-int8, shufflenet-v2-qdq and mnist-8 from
/// ../shared.
final class TestServer: @unchecked Sendable {
    let port: Int
    let service: InferenceService
    private let task: Task<Void, any Error>

    private init(port: Int, service: InferenceService, task: Task<Void, any Error>) {
        self.port = port
        self.service = service
        self.task = task
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// One server for the whole test process (loading models takes a moment).
    static let shared: Task<TestServer, any Error> = Task { try await start() }

    static func modelFolder() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("glimpse-test-models-\(getpid())")
        try? FileManager.default.removeItem(at: dir)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let fm = FileManager.default
        try fm.createSymbolicLink(atPath: dir.appendingPathComponent("squeezenet1.1.onnx").path,
                                  withDestinationPath: try SharedData.path("models/squeezenet1.1.onnx"))
        try fm.createSymbolicLink(atPath: dir.appendingPathComponent("mobilenetv2-int8.onnx").path,
                                  withDestinationPath: try SharedData.path("models/mobilenetv2-int8.onnx"))
        try #"{"preprocessing": "imagenet", "family": "mobilenetv2", "variant": "int8"}"#
            .write(to: dir.appendingPathComponent("mobilenetv2-int8.json"), atomically: true, encoding: .utf8)
        try fm.createSymbolicLink(atPath: dir.appendingPathComponent("shufflenet-v2-qdq.onnx").path,
                                  withDestinationPath: try SharedData.path("models/shufflenet-v2-qdq.onnx"))
        try #"{"preprocessing": "imagenet"}"#
            .write(to: dir.appendingPathComponent("shufflenet-v2-qdq.json"), atomically: true, encoding: .utf8)
        try fm.createSymbolicLink(atPath: dir.appendingPathComponent("mnist-8.onnx").path,
                                  withDestinationPath: try SharedData.path("models/mnist-8.onnx"))
        try fm.createSymbolicLink(atPath: dir.appendingPathComponent("imagenet_classes.txt").path,
                                  withDestinationPath: try SharedData.path("labels/imagenet_classes.txt"))
        try #"{"preprocessing": "imagenet", "family": "squeezenet1.1", "variant": "fp32"}"#
            .write(to: dir.appendingPathComponent("squeezenet1.1.json"), atomically: true, encoding: .utf8)
        try #"{"preprocessing": "mnist"}"#.write(to: dir.appendingPathComponent("mnist-8.json"), atomically: true, encoding: .utf8)
        return dir.path
    }

    static func start(serving: ServingConfiguration = .init()) async throws -> TestServer {
        var logger = Logger(label: "glimpse.test")
        logger.logLevel = .warning
        let service = InferenceService(configuration: serving, logger: logger)
        let problems = service.registry.loadDirectory(try modelFolder())
        guard problems.isEmpty else { throw TestServerError(description: "models failed to load: \(problems)") }
        var config = ServerConfiguration(host: "127.0.0.1", port: 0, maxBodyBytes: 4 << 20, maxBatchLength: 64)
        // GLIMPSE_HTTP2_TRANSPORT chooses the HTTP/2 implementation, as it does for `glimpse serve`.
        if let name = ProcessInfo.processInfo.environment["GLIMPSE_HTTP2_TRANSPORT"], let transport = HTTP2Transport(rawValue: name) {
            config.http2.transport = transport
        }
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let app = try GlimpseServer.makeApplication(
            configuration: config, service: service,
            dispatcher: GlimpseServer.makeDispatcher(service: service, configuration: config),
            metricsText: { Array("# metrics\n".utf8) },
            onServerRunning: { port in continuation.yield(port) },
            logger: logger)
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        var iterator = stream.makeAsyncIterator()
        guard let port = await iterator.next() else { throw TestServerError(description: "server did not start") }
        return TestServer(port: port, service: service, task: task)
    }
}

struct TestServerError: Error, CustomStringConvertible {
    let description: String
}
