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
    private let wake: WakeupFD
    let session: NGHTTP2Session
    /// Open streams, each at its `slot` (nil: free; free slots are listed in `freeSlots`). Slots rather
    /// than a dictionary by stream id: opening and closing a stream hashes nothing.
    @exclusivity(unchecked) private var slots: [H2StreamState?] = []
    @exclusivity(unchecked) private var freeSlots: [Int] = []
    @exclusivity(unchecked) private var openCount = 0
    /// Streams finished (failed or answered) and not yet delivered to their completion.
    @exclusivity(unchecked) var finished: [H2StreamState] = []
    /// The other buffer of `finished`, swapped in while a batch is delivered (no copy, no allocation).
    @exclusivity(unchecked) private var delivering: [H2StreamState] = []
    private var isDelivering = false
    /// Delivered states kept for reuse.
    @exclusivity(unchecked) private var spareStates: [H2StreamState] = []
    private var driver: H2LoopDriver?
    /// `driver` when it takes completions of `submitOnLoop(block:body:...)` streams.
    private var sink: H2StreamSink?
    /// Whether responses carry their (non-pseudo) headers. A load driver that reads only status and
    /// body turns this off, so no header strings are built per response. Set before `start`.
    var collectsResponseHeaders: Bool {
        get { session.collectsHeaders }
        set { session.collectsHeaders = newValue }
    }
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

    /// Bytes of `session.output` already written to the socket.
    @exclusivity(unchecked) private var outStart = 0
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)

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
    private var turnNow: UInt64 = 0

    private func makeState(requestBody: [UInt8]?, completion: H2Completion?, tag: UInt64, flag: Bool, submitted: UInt64) -> H2StreamState {
        let deadline = (turnNow != 0 ? turnNow : MonotonicClock.now()) &+ requestTimeoutNs
        if let state = spareStates.popLast() {
            state.reuse(requestBody: requestBody, completion: completion, tag: tag, flag: flag, submitted: submitted, deadline: deadline)
            return state
        }
        return H2StreamState(requestBody: requestBody, completion: completion, tag: tag, flag: flag, submitted: submitted, deadline: deadline)
    }

    private func open(_ state: H2StreamState, block: H2HeaderBlock) {
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

    // MARK: - Event loop

    /// The loop of one thread over its connections: each turn, every connection takes its inbox, lets its
    /// driver send, delivers completions and writes; then one wait for all; then each reads what arrived.
    private static func runLoop(_ connections: [H2Connection]) {
        let waiter = LoopWaiter(connections.map { LoopWaiter.Item(socket: $0.socket.fd, wake: $0.wake.fd) })
        var live = connections.count
        // A connection whose last turn asked to wake at `due[i]` and that has had no event since (no data,
        // wake-up or writability) is in the same state as after that turn: its turn is skipped until then.
        var due = [UInt64](repeating: 0, count: connections.count)
        var touched = [Bool](repeating: true, count: connections.count)
        while true {
            var wakeAt = UInt64.max
            let turnStart = MonotonicClock.now()  // one clock read per turn for all connections
            for (i, connection) in connections.enumerated() where waiter.items[i].active {
                if !touched[i] && turnStart < due[i] {
                    wakeAt = min(wakeAt, due[i])
                    continue
                }
                if let at = connection.prepareTurn(now: turnStart) {
                    // TLS input already off the socket announces itself by no event: read it without waiting.
                    wakeAt = min(wakeAt, connection.tls?.hasBufferedInput == true ? 0 : at)
                    due[i] = at
                    touched[i] = false
                    waiter.items[i].wantWrite = connection.hasPendingOutput
                } else {
                    connection.finishLoop()
                    waiter.deactivate(i)
                    live -= 1
                }
            }
            if live == 0 { return }
            let now = MonotonicClock.now()
            let waitNs = wakeAt <= now ? 0 : min(wakeAt - now, 1_000_000_000)
            if let code = waiter.wait(timeoutNs: waitNs) {
                let error = H2Error(.connectionClosed, detail: "wait: \(String(cString: strerror(code)))")
                for (i, connection) in connections.enumerated() where waiter.items[i].active {
                    connection.endLoop(error)
                    connection.finishLoop()
                    waiter.deactivate(i)
                }
                return
            }
            let woke = MonotonicClock.now()
            for (i, connection) in connections.enumerated() where waiter.items[i].active {
                let item = waiter.items[i]
                connection.turnNow = woke
                let buffered = connection.tls?.hasBufferedInput == true
                if item.woken || item.readable || item.writable || buffered { touched[i] = true }
                if item.woken { connection.wake.drain() }
                if item.readable || buffered { connection.readAvailable() }
            }
        }
    }

    /// Set when this connection's part of the loop has ended (loop thread).
    private var loopEnded = false
    private var loopError: H2Error?
    private var nextTimeoutScan: UInt64 = 0

    private func endLoop(_ error: H2Error?) {
        loopEnded = true
        if loopError == nil { loopError = error }
    }

    /// One turn's work before the wait. Returns when the loop should wake up for this connection, or nil
    /// when its part of the loop has ended.
    private func prepareTurn(now turnStart: UInt64) -> UInt64? {
        if loopEnded { return nil }
        var now = turnStart
        turnNow = now
        lock.lock()
        let incoming = inbox
        if !incoming.isEmpty { inbox.removeAll(keepingCapacity: true) }
        let stopping = stopRequested
        lock.unlock()
        if stopping {
            endLoop(nil)
            return nil
        }
        for (request, completion) in incoming { submitOnLoop(request, completion: completion) }
        if !incoming.isEmpty { now = MonotonicClock.now() }
        let wantTick = driver?.tick(self, now: now)
        deliverFinished()
        do { try flush() } catch let e as H2Error {
            endLoop(e)
            return nil
        } catch {
            endLoop(nil)
            return nil
        }
        if !session.wantsIO && outStart == session.output.count {
            endLoop(H2Error(.goaway, detail: "session ended (\(goawayDetail ?? "GOAWAY"))"))
            return nil
        }
        // The timeout scan runs every 50 ms; the turn's clock is close enough to decide when.
        if now >= nextTimeoutScan {
            expireStreams(now: now)
            nextTimeoutScan = now + 50_000_000
        }
        var wakeAt = nextTimeoutScan
        if let t = wantTick { wakeAt = min(wakeAt, t) }
        return wakeAt
    }

    /// Reads and processes what the socket holds (up to 16 full buffers; over TLS, of plaintext).
    private func readAvailable() {
        for _ in 0..<16 {
            let result = if let tls { tls.read(into: readBuffer, from: socket) } else { socket.read(into: readBuffer) }
            switch result {
            case .bytes(let n):
                do { try session.receive(UnsafeRawBufferPointer(rebasing: readBuffer[0..<n])) } catch let e as H2Error {
                    endLoop(e)
                    return
                } catch {
                    endLoop(nil)
                    return
                }
                deliverFinished()
                // A short read drained the socket (as far as a read can tell): skip the read that would
                // only say EAGAIN; the next wait reports anything that arrives later.
                if n < readBuffer.count { return }
            case .wouldBlock:
                return
            case .eof:
                endLoop(H2Error(.connectionClosed, detail: "server closed the connection"))
                return
            case .failed(let text):
                endLoop(tls?.failure ?? H2Error(.connectionClosed, detail: "recv: \(text)"))
                return
            }
        }
    }

    /// Ends this connection's part of the loop: fails what is open, then lets `join` through.
    private func finishLoop() {
        shutDown(loopError ?? H2Error(.connectionClosed, detail: "client stopped"))
        lock.lock()
        threadExited = true
        lock.unlock()
        exited.signal()
    }

    private var hasPendingOutput: Bool {
        outStart < session.output.count || session.wantsWrite || tls?.hasPendingOutput == true
    }

    /// Serializes pending frames (coalesced up to 64 KiB) and writes what the socket takes (over TLS:
    /// ciphertext already encrypted goes first).
    private func flush() throws {
        if let tls {
            switch tls.sendPending(to: socket) {
            case .drained: break
            case .wouldBlock: return
            case .failed(let error): throw error
            }
        }
        while true {
            if outStart == session.output.count {
                session.output.removeAll()
                outStart = 0
                try session.serialize()
                if session.output.isEmpty { return }
            }
            let pending = session.output.bytes(from: outStart)
            let result = if let tls { tls.write(pending, to: socket) } else { socket.write(pending) }
            switch result {
            case .bytes(let n): outStart += n
            case .wouldBlock: return
            case .eof: throw H2Error(.connectionClosed, detail: "send: connection closed")
            case .failed(let text): throw tls?.failure ?? H2Error(.connectionClosed, detail: "send: \(text)")
            }
        }
    }

    private func expireStreams(now: UInt64) {
        for case let state? in slots where state.deadline <= now {
            close(state)
            session.detach(state.id)
            session.resetStream(state.id)
            state.failure = H2Error(.timeout, detail: "no response within \(Double(requestTimeoutNs) / 1e9) s")
            finished.append(state)
        }
        deliverFinished()
    }

    /// Calls completions outside nghttp2 callbacks, so they may submit new requests safely.
    func deliverFinished() {
        guard !isDelivering else { return }  // a completion's own submissions wait for the loop below
        isDelivering = true
        defer { isDelivering = false }
        while !finished.isEmpty {
            swap(&finished, &delivering)
            let now = MonotonicClock.now()
            let sink = self.sink
            for state in delivering {
                let timing = H2Timing(submitted: state.submitted, headersSent: state.headersSent, completed: now)
                if let completion = state.completion {
                    completion(state.result, timing)
                } else {
                    sink?.streamFinished(state, timing: timing)
                }
            }
            for i in delivering.indices where spareStates.count < 4096 && isKnownUniquelyReferenced(&delivering[i]) {
                delivering[i].clear()
                spareStates.append(delivering[i])
            }
            delivering.removeAll(keepingCapacity: true)
        }
    }

    private func shutDown(_ reason: H2Error) {
        session.terminate()
        try? flush()
        if let tls {
            tls.close()
            try? flush()
        }
        // The peer sees the end at once, not when this object is freed.
        socket.shutdownBoth()
        lock.lock()
        loopClosed = true
        _closeReason = reason
        let leftover = inbox
        inbox.removeAll()
        lock.unlock()
        for case let state? in slots {
            close(state)
            session.detach(state.id)
            state.failure = reason
            finished.append(state)
        }
        slots.removeAll()
        freeSlots.removeAll()
        deliverFinished()
        let now = MonotonicClock.now()
        for (_, completion) in leftover { completion(.failure(reason), H2Timing(submitted: now, headersSent: 0, completed: now)) }
        driver = nil
        sink = nil
    }
}
