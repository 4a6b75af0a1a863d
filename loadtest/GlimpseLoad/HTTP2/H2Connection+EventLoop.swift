import CNGHTTP2
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Event loop

extension H2Connection {
    /// The loop of one thread over its connections: each turn, every connection takes its inbox, lets its
    /// driver send, delivers completions and writes; then one wait for all; then each reads what arrived.
    static func runLoop(_ connections: [H2Connection]) {
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

    func endLoop(_ error: H2Error?) {
        loopEnded = true
        if loopError == nil { loopError = error }
    }

    /// One turn's work before the wait. Returns when the loop should wake up for this connection, or nil
    /// when its part of the loop has ended.
    func prepareTurn(now turnStart: UInt64) -> UInt64? {
        if loopEnded { return nil }
        var now = turnStart
        turnNow = now
        lock.lock()
        // Moved out, not copied: the two never share a buffer, so `submit` appends to a buffer this
        // thread does not read (a shared copy-on-write buffer is ordered only by its reference count,
        // which ThreadSanitizer does not see).
        var incoming: [(H2Request, H2Completion)] = []
        swap(&incoming, &inbox)
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
    func readAvailable() {
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
    func finishLoop() {
        shutDown(loopError ?? H2Error(.connectionClosed, detail: "client stopped"))
        lock.lock()
        threadExited = true
        lock.unlock()
        exited.signal()
    }

    var hasPendingOutput: Bool {
        outStart < session.output.count || session.wantsWrite || tls?.hasPendingOutput == true
    }

    /// Serializes pending frames (coalesced up to 64 KiB) and writes what the socket takes (over TLS:
    /// ciphertext already encrypted goes first).
    func flush() throws {
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

    func expireStreams(now: UInt64) {
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

    func shutDown(_ reason: H2Error) {
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
