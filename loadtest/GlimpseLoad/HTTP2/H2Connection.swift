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

/// One HTTP/2 connection over libnghttp2, with many concurrent streams: h2c (prior knowledge), or h2 over
/// TLS (ALPN "h2") when made with a `TLSContext`. Its loop runs on an event-loop thread (shared with other
/// connections); completions are called on that thread.
public final class H2Connection: @unchecked Sendable {
    public let host: String
    public let port: Int
    public let authority: String
    /// `https` over TLS, else `http`: the `:scheme` of its requests.
    public let scheme: String
    /// Requests that get no complete response within this time fail with `.timeout`.
    public let requestTimeoutNs: UInt64

    let socket: PosixSocket
    /// The TLS session when the connection is h2 over TLS (nil: h2c).
    let tls: TLSChannel?
    let wake: WakeupFD
    let session: NGHTTP2Session
    /// Open streams, each at its `slot` (nil: free; free slots are listed in `freeSlots`). Slots rather
    /// than a dictionary by stream id: opening and closing a stream hashes nothing.
    @exclusivity(unchecked) var slots: [H2StreamState?] = []
    @exclusivity(unchecked) var freeSlots: [Int] = []
    @exclusivity(unchecked) var openCount = 0
    /// Streams finished (failed or answered) and not yet delivered to their completion.
    @exclusivity(unchecked) var finished: [H2StreamState] = []
    /// The other buffer of `finished`, swapped in while a batch is delivered (no copy, no allocation).
    @exclusivity(unchecked) var delivering: [H2StreamState] = []
    var isDelivering = false
    /// Delivered states kept for reuse.
    @exclusivity(unchecked) var spareStates: [H2StreamState] = []
    var driver: H2LoopDriver?
    /// `driver` when it takes completions of `submitOnLoop(block:body:...)` streams.
    var sink: H2StreamSink?
    /// Whether responses carry their (non-pseudo) headers. A load driver that reads only status and
    /// body turns this off, so no header strings are built per response. Set before `start`.
    var collectsResponseHeaders: Bool {
        get { session.collectsHeaders }
        set { session.collectsHeaders = newValue }
    }
    /// Set when the server sent GOAWAY (loop thread).
    var goawayDetail: String?
    var thread: Thread?
    let exited = DispatchSemaphore(value: 0)

    let lock = NSLock()
    var inbox: [(H2Request, H2Completion)] = []
    var stopRequested = false
    var loopClosed = false
    var threadExited = false
    var _closeReason: H2Error?

    /// Why the loop ended (nil while it runs).
    public var closeReason: H2Error? {
        lock.lock()
        defer { lock.unlock() }
        return _closeReason
    }

    /// Bytes of `session.output` already written to the socket.
    @exclusivity(unchecked) var outStart = 0
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)

    /// Connects (and with `tls`, completes the TLS handshake and checks that the server chose "h2") before
    /// returning; each step is bounded by `connectTimeout` seconds. Failures throw `H2Error` (`.connect`,
    /// `.tls`).
    public init(host: String, port: Int, requestTimeout: Double = 30, maxConcurrentStreams: UInt32 = 1000,
                tls: TLSContext? = nil, connectTimeout: Double = 5) throws {
        self.host = host
        self.port = port
        self.authority = "\(host):\(port)"
        self.scheme = tls == nil ? "http" : "https"
        self.requestTimeoutNs = UInt64(max(requestTimeout, 0.001) * 1e9)
        let timeoutMs = Int(min(max(connectTimeout, 0.001), 3600) * 1000)
        socket = try PosixSocket(host: host, port: port, timeoutMs: Int32(timeoutMs))
        if let tls {
            let channel = try TLSChannel(context: tls, host: host)
            try channel.handshake(over: socket, peer: authority, timeoutMs: timeoutMs)
            self.tls = channel
        } else {
            self.tls = nil
        }
        wake = try WakeupFD()
        session = try NGHTTP2Session(maxConcurrentStreams: maxConcurrentStreams)
        session.handler = self
    }

    deinit { readBuffer.deallocate() }

    /// Streams open or queued on this connection (loop thread only).
    public var inFlight: Int { openCount }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (loop thread only).
    public var peerMaxConcurrentStreams: Int { Int(session.peerMaxConcurrentStreams) }

    /// Starts the event-loop thread. `driver` is retained until the loop exits.
    public func start(driver: H2LoopDriver? = nil, name: String = "h2-connection") {
        H2Connection.start([self], drivers: [driver], name: name)
    }

    /// Runs several connections on one event-loop thread (as h2load does), so a wake-up serves whichever
    /// of them has data: fewer sleeps and wake-ups than a thread per connection. Each connection's loop
    /// part ends on its own (`stop`, failure); the thread exits when all have. `drivers[i]` drives
    /// `connections[i]` and is retained until that connection's part ends.
    public static func start(_ connections: [H2Connection], drivers: [H2LoopDriver?], name: String = "h2-connection") {
        start(connections, drivers: drivers, sinks: drivers.map { _ in nil }, name: name)
    }

    /// As `start(_:drivers:name:)`, with the `H2StreamSink` of each connection's `submitOnLoop(block:...)`
    /// streams given (no dynamic cast of the driver: a first protocol-conformance lookup scans every
    /// loaded image, a visible cost at start-up).
    static func start(_ connections: [H2Connection], drivers: [H2LoopDriver?], sinks: [H2StreamSink?], name: String) {
        precondition(connections.count == drivers.count && connections.count == sinks.count, "one driver and sink (or nil) per connection")
        guard !connections.isEmpty else { return }
        for (i, connection) in connections.enumerated() {
            connection.driver = drivers[i]
            connection.sink = sinks[i]
        }
        let thread = Thread { H2Connection.runLoop(connections) }
        thread.name = name
        thread.stackSize = 1 << 20
        for connection in connections { connection.thread = thread }
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
        let state = makeState(requestBody: request.body, completion: completion, tag: 0, flag: false, submitted: submitted)
        open(state, block: request.headerBlock ?? H2HeaderBlock(request.headerList))
    }

    /// The load driver's path (loop thread): a prepared header block and body; the completion goes to the
    /// driver (`H2StreamSink`) with `tag` and `flag`, so no closure is allocated per request.
    func submitOnLoop(block: H2HeaderBlock, body: [UInt8]?, submitted: UInt64, tag: UInt64, flag: Bool) {
        let state = makeState(requestBody: body, completion: nil, tag: tag, flag: flag, submitted: submitted)
        open(state, block: block)
    }

    /// The clock at the start of this loop turn and again after its wait (loop thread): request deadlines
    /// count from it, which saves a clock read per request (timeouts are scanned every 50 ms anyway).
    var turnNow: UInt64 = 0

    func makeState(requestBody: [UInt8]?, completion: H2Completion?, tag: UInt64, flag: Bool, submitted: UInt64) -> H2StreamState {
        let deadline = (turnNow != 0 ? turnNow : MonotonicClock.now()) &+ requestTimeoutNs
        if let state = spareStates.popLast() {
            state.reuse(requestBody: requestBody, completion: completion, tag: tag, flag: flag, submitted: submitted, deadline: deadline)
            return state
        }
        return H2StreamState(requestBody: requestBody, completion: completion, tag: tag, flag: flag, submitted: submitted, deadline: deadline)
    }

    func open(_ state: H2StreamState, block: H2HeaderBlock) {
        do {
            let id = try session.submitRequest(block, hasBody: state.requestBody != nil, state: state)
            state.id = id
            if let slot = freeSlots.popLast() {
                state.slot = slot
                slots[slot] = state
            } else {
                state.slot = slots.count
                slots.append(state)
            }
            openCount += 1
        } catch let error as H2Error {
            state.failure = error
            finished.append(state)
        } catch {
            state.failure = H2Error(.invalidRequest, detail: "\(error)")
            finished.append(state)
        }
    }

    /// Whether `state` is an open stream of this connection.
    func isOpen(_ state: H2StreamState) -> Bool {
        let slot = state.slot
        return slot >= 0 && slot < slots.count && slots[slot] === state
    }

    /// Takes an open stream out of `slots` (releasing it); false if it was not open.
    @discardableResult
    func close(_ state: H2StreamState) -> Bool {
        let slot = state.slot
        guard isOpen(state) else { return false }
        slots[slot] = nil
        freeSlots.append(slot)
        state.slot = -1
        openCount -= 1
        return true
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

    var loopEnded = false
    var loopError: H2Error?
    var nextTimeoutScan: UInt64 = 0
}
