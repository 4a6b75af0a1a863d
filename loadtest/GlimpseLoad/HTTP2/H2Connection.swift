import CNGHTTP2
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Drives load on a connection's own thread. `tick` is called on every loop iteration and returns
/// the next time (monotonic ns) it wants to be called, or nil to be called only on I/O events.
public protocol H2LoopDriver: AnyObject {
    func tick(_ connection: H2Connection, now: UInt64) -> UInt64?
}

/// One h2c (prior knowledge) connection over libnghttp2, with many concurrent streams. It runs an
/// event loop over `poll()` on its own thread; completions are called on that thread.
public final class H2Connection: @unchecked Sendable {
    public let host: String
    public let port: Int
    public let authority: String
    /// Requests that get no complete response within this time fail with `.timeout`.
    public let requestTimeoutNs: UInt64

    let socket: PosixSocket
    private let wake: WakeupFD
    let session: NGHTTP2Session
    var streams: [Int32: H2StreamState] = [:]
    var finished: [(H2StreamState, Result<H2Response, H2Error>)] = []
    private var driver: H2LoopDriver?
    /// Set when the server sent GOAWAY (loop thread).
    var goawayDetail: String?
    private var thread: Thread?
    private let exited = DispatchSemaphore(value: 0)

    private let lock = NSLock()
    private var inbox: [(H2Request, H2Completion)] = []
    private var stopRequested = false
    private var loopClosed = false
    private var threadExited = false
    private var _closeReason: H2Error?

    /// Why the loop ended (nil while it runs).
    public var closeReason: H2Error? {
        lock.lock()
        defer { lock.unlock() }
        return _closeReason
    }

    private var outBuffer: [UInt8] = []
    private var outStart = 0
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)

    public init(host: String, port: Int, requestTimeout: Double = 30, maxConcurrentStreams: UInt32 = 1000) throws {
        self.host = host
        self.port = port
        self.authority = "\(host):\(port)"
        self.requestTimeoutNs = UInt64(max(requestTimeout, 0.001) * 1e9)
        socket = try PosixSocket(host: host, port: port)
        wake = try WakeupFD()
        session = try NGHTTP2Session(maxConcurrentStreams: maxConcurrentStreams)
        session.handler = self
    }

    deinit { readBuffer.deallocate() }

    /// Streams open or queued on this connection (loop thread only).
    public var inFlight: Int { streams.count }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (loop thread only).
    public var peerMaxConcurrentStreams: Int { Int(session.peerMaxConcurrentStreams) }

    /// Starts the event-loop thread. `driver` is retained until the loop exits.
    public func start(driver: H2LoopDriver? = nil, name: String = "h2-connection") {
        self.driver = driver
        let thread = Thread { [self] in
            runLoop()
            lock.lock()
            threadExited = true
            lock.unlock()
            exited.signal()
        }
        thread.name = name
        thread.stackSize = 1 << 20
        self.thread = thread
        thread.start()
    }

    /// Submits a request from any thread. If the loop has exited, completes at once with `.connectionClosed`.
    public func submit(_ request: H2Request, completion: @escaping H2Completion) {
        lock.lock()
        if loopClosed {
            let reason = _closeReason ?? H2Error(.connectionClosed, detail: "connection closed")
            lock.unlock()
            let now = MonotonicClock.now()
            completion(.failure(reason), H2Timing(submitted: now, headersSent: 0, completed: now))
            return
        }
        inbox.append((request, completion))
        lock.unlock()
        wake.signal()
    }

    /// Submits a request from the loop thread (inside `tick` or a completion).
    /// `submitted` may be an earlier intended send time; it is reported back in `H2Timing`.
    public func submitOnLoop(_ request: H2Request, submitted: UInt64 = MonotonicClock.now(), completion: @escaping H2Completion) {
        let state = H2StreamState(request: request, completion: completion, submitted: submitted,
                                  deadline: MonotonicClock.now() &+ requestTimeoutNs)
        do {
            let id = try session.submitRequest(request.headerBlock ?? H2HeaderBlock(request.headerList), hasBody: request.body != nil)
            state.id = id
            streams[id] = state
        } catch let error as H2Error {
            finished.append((state, .failure(error)))
        } catch {
            finished.append((state, .failure(H2Error(.invalidRequest, detail: "\(error)"))))
        }
    }

    /// Asks the loop to stop; streams still open fail with `.connectionClosed`. Safe from any thread.
    public func stop() {
        lock.lock()
        stopRequested = true
        lock.unlock()
        wake.signal()
    }

    /// Waits until the loop thread has exited (after `stop()` or a connection failure).
    public func join(timeout seconds: Double = 10) -> Bool {
        guard thread != nil else { return true }
        lock.lock()
        let done = threadExited
        lock.unlock()
        if done { return true }
        guard exited.wait(timeout: .now() + seconds) == .success else { return false }
        exited.signal()  // let any other joiner through too
        return true
    }

    // MARK: - Event loop

    private func runLoop() {
        var nextTimeoutScan: UInt64 = 0
        var error: H2Error?
        loop: while true {
            lock.lock()
            let incoming = inbox
            inbox.removeAll(keepingCapacity: true)
            let stopping = stopRequested
            lock.unlock()
            if stopping { break }
            for (request, completion) in incoming { submitOnLoop(request, completion: completion) }
            var now = MonotonicClock.now()
            let wantTick = driver?.tick(self, now: now)
            deliverFinished()
            do { try flush() } catch let e as H2Error { error = e; break } catch { break }
            if !session.wantsIO && outStart == outBuffer.count {
                error = H2Error(.goaway, detail: "session ended (\(goawayDetail ?? "GOAWAY"))")
                break
            }
            now = MonotonicClock.now()
            if now >= nextTimeoutScan {
                expireStreams(now: now)
                nextTimeoutScan = now + 50_000_000
            }
            var wakeAt = nextTimeoutScan
            if let t = wantTick { wakeAt = min(wakeAt, t) }
            let waitNs = wakeAt <= now ? 0 : min(wakeAt - now, 1_000_000_000)
            let ready = LoopWait.wait(socket: socket.fd, wantWrite: hasPendingOutput, wake: wake.fd, timeoutNs: waitNs)
            if let code = ready.failed {
                error = H2Error(.connectionClosed, detail: "wait: \(String(cString: strerror(code)))")
                break
            }
            if ready.woken { wake.drain() }
            if ready.readable {
                for _ in 0..<16 {
                    switch socket.read(into: readBuffer) {
                    case .bytes(let n):
                        do { try session.receive(UnsafeRawBufferPointer(rebasing: readBuffer[0..<n])) } catch let e as H2Error {
                            error = e
                            break loop
                        } catch { break loop }
                        deliverFinished()
                        if n < readBuffer.count { continue }
                    case .wouldBlock:
                        break
                    case .eof:
                        error = H2Error(.connectionClosed, detail: "server closed the connection")
                        break loop
                    case .failed(let text):
                        error = H2Error(.connectionClosed, detail: "recv: \(text)")
                        break loop
                    }
                    break
                }
            }
        }
        shutDown(error ?? H2Error(.connectionClosed, detail: "client stopped"))
    }

    private var hasPendingOutput: Bool { outStart < outBuffer.count || session.wantsWrite }

    /// Serializes pending frames (coalesced up to 64 KiB) and writes what the socket takes.
    private func flush() throws {
        while true {
            if outStart == outBuffer.count {
                outBuffer.removeAll(keepingCapacity: true)
                outStart = 0
                while outBuffer.count < 1 << 16 {
                    let chunk = try session.nextOutput()
                    if chunk.isEmpty { break }
                    outBuffer.append(contentsOf: chunk)
                }
                if outBuffer.isEmpty { return }
            }
            let result = outBuffer.withUnsafeBytes { socket.write(UnsafeRawBufferPointer(rebasing: $0[outStart...])) }
            switch result {
            case .bytes(let n): outStart += n
            case .wouldBlock: return
            case .eof: throw H2Error(.connectionClosed, detail: "send: connection closed")
            case .failed(let text): throw H2Error(.connectionClosed, detail: "send: \(text)")
            }
        }
    }

    private func expireStreams(now: UInt64) {
        for (id, state) in streams where state.deadline <= now {
            streams[id] = nil
            session.resetStream(id)
            finished.append((state, .failure(H2Error(.timeout, detail: "no response within \(Double(requestTimeoutNs) / 1e9) s"))))
        }
        deliverFinished()
    }

    /// Calls completions outside nghttp2 callbacks, so they may submit new requests safely.
    func deliverFinished() {
        while !finished.isEmpty {
            let batch = finished
            finished.removeAll(keepingCapacity: true)
            let now = MonotonicClock.now()
            for (state, result) in batch {
                state.completion(result, H2Timing(submitted: state.submitted, headersSent: state.headersSent, completed: now))
            }
        }
    }

    private func shutDown(_ reason: H2Error) {
        session.terminate()
        try? flush()
        lock.lock()
        loopClosed = true
        _closeReason = reason
        let leftover = inbox
        inbox.removeAll()
        lock.unlock()
        for (_, state) in streams { finished.append((state, .failure(reason))) }
        streams.removeAll()
        deliverFinished()
        let now = MonotonicClock.now()
        for (_, completion) in leftover { completion(.failure(reason), H2Timing(submitted: now, headersSent: 0, completed: now)) }
        driver = nil
    }
}
