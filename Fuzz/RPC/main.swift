import CLibFuzzer
import Dispatch
import Foundation
import GlimpseRPC
import GlimpseServing

/// One service with mnist-8 loaded (from `$GLIMPSE_SHARED/models`, else `../shared/models`), built once
/// per process, and the dispatcher the server builds over the same method table, with the same
/// `classify` fast path.
private let dispatcher: RPCDispatcher = {
    let shared = ProcessInfo.processInfo.environment["GLIMPSE_SHARED"] ?? "../shared"
    let folder = NSTemporaryDirectory() + "glimpse-fuzz-rpc-\(getpid())"
    let fm = FileManager.default
    try? fm.removeItem(atPath: folder)
    do {
        try fm.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: folder + "/mnist-8.onnx", withDestinationPath: shared + "/models/mnist-8.onnx")
        try #"{"preprocessing": "mnist"}"#.write(toFile: folder + "/mnist-8.json", atomically: true, encoding: .utf8)
        let service = InferenceService(configuration: .init(decodeThreads: 1, engineThreads: 1,
                                                            batching: .init(maxQueueDelayNanos: 0),
                                                            imageLimits: .init(maxEncodedBytes: 1 << 20, maxPixels: 4_000_000)))
        _ = try service.registry.load(named: "mnist-8", directory: folder)
        return RPCDispatcher(methods: GlimpseMethods.table(service: service), adminMethods: GlimpseMethods.adminMethods,
                             classify: ClassifyFastPath(service: service))
    } catch {
        fatalError("cannot load mnist-8 from \(shared)/models: \(error)")
    }
}()

/// A whole request body in; the response must be empty (notifications only) or one JSON value.
/// Not admin, so `models.unload` cannot take the model away from the calls that follow.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Array(UnsafeBufferPointer(start: data, count: size))
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var response: RPCHTTPResponse?
    Task {
        response = await dispatcher.handle(body: body, context: RPCContext(isAdmin: false))
        done.signal()
    }
    done.wait()
    guard let response else { fatalError("no response") }
    if !response.body.isEmpty {
        do { _ = try JSONValue.parse(response.body) } catch {
            fatalError("response is not JSON (\(error)): \(String(decoding: response.body, as: UTF8.self))")
        }
    }
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzz(data!, size) })
