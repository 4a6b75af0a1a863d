import Foundation
import Hummingbird
import Logging

/// A small Hummingbird app on 127.0.0.1 serving files for download tests. It honours `Range:
/// bytes=N-` (206 / 416), can redirect, and can misbehave on purpose: corrupt the bytes it sends,
/// or close the connection after a number of body bytes.
final class RangeHTTPServer: @unchecked Sendable {
    enum Behaviour: Sendable {
        case normal
        /// Flip one byte in the middle of every body.
        case corrupt
        /// Send full headers, then only this many body bytes, then close.
        case cutAfter(Int)
        /// Ignore `Range` and always answer 200 with the whole file.
        case ignoreRange
        /// Send the headers, then nothing for this many seconds.
        case stall(seconds: Double)
    }

    struct Request: Sendable {
        var path: String
        var range: String?
    }

    /// Thrown by a body writer to end the connection mid-body.
    private struct CutShort: Error {}

    private let lock = NSLock()
    private var files: [String: [UInt8]] = [:]
    private var redirects: [String: String] = [:]
    private var _behaviour: Behaviour = .normal
    private var _requests: [Request] = []
    private var task: Task<Void, any Error>?
    private(set) var port = 0

    var behaviour: Behaviour {
        get { locked { _behaviour } }
        set { locked { _behaviour = newValue } }
    }

    var requests: [Request] { locked { _requests } }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Starts the app on a free port and returns once it listens.
    init() throws {
        let router = Router()
        router.get("**") { [self] request, _ in
            respond(path: request.uri.path, range: request.headers[.range])
        }
        var logger = Logger(label: "range-http-server")
        logger.logLevel = .critical
        let listening = DispatchSemaphore(value: 0)
        let bound = LockedPort()
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                bound.set(channel.localAddress?.port ?? 0)
                listening.signal()
            },
            logger: logger)
        task = Task { try await app.runService(gracefulShutdownSignals: []) }
        guard listening.wait(timeout: .now() + 30) == .success, bound.value > 0 else {
            task?.cancel()
            throw ServerError("the test HTTP server did not start")
        }
        port = bound.value
    }

    func serve(_ path: String, bytes: [UInt8]) { locked { files[path] = bytes } }
    func redirect(_ path: String, to location: String) { locked { redirects[path] = location } }

    func stop() { task?.cancel() }

    private func respond(path: String, range: String?) -> Response {
        let (file, location, behaviour): ([UInt8]?, String?, Behaviour) = locked {
            _requests.append(Request(path: path, range: range))
            return (files[path], redirects[path], _behaviour)
        }
        if let location {
            return Response(status: .found, headers: [.location: location])
        }
        guard var body = file else {
            return Response(status: .notFound, body: .init(byteBuffer: ByteBuffer(string: "not found")))
        }
        if case .corrupt = behaviour, !body.isEmpty { body[body.count / 2] ^= 0xFF }
        var start = 0
        var headers: HTTPFields = [.contentType: "application/octet-stream", .acceptRanges: "bytes"]
        var status = HTTPResponse.Status.ok
        if let range, range.hasPrefix("bytes="), range.hasSuffix("-"), let n = Int(range.dropFirst(6).dropLast()) {
            if case .ignoreRange = behaviour {
            } else if n >= body.count {
                return Response(status: .rangeNotSatisfiable, headers: [.contentRange: "bytes */\(body.count)"])
            } else {
                start = n
                status = .partialContent
                headers[.contentRange] = "bytes \(n)-\(body.count - 1)/\(body.count)"
            }
        }
        let slice = Array(body[start...])
        switch behaviour {
        case .stall(let seconds):
            return Response(status: status, headers: headers, body: ResponseBody(contentLength: slice.count) { _ in
                try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
                throw CutShort()
            })
        case .cutAfter(let n):
            return Response(status: status, headers: headers, body: ResponseBody(contentLength: slice.count) { writer in
                try await writer.write(ByteBuffer(bytes: slice.prefix(n)))
                throw CutShort()
            })
        default:
            return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: slice)))
        }
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    struct ServerError: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }
}

/// The port the app reports once it listens, handed from its task to the initializer.
private final class LockedPort: @unchecked Sendable {
    private let lock = NSLock()
    private var port = 0
    var value: Int { lock.lock(); defer { lock.unlock() }; return port }
    func set(_ p: Int) { lock.lock(); port = p; lock.unlock() }
}
