import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// One connection's TLS session (`SSL`) over an OpenSSL BIO pair. OpenSSL reads and writes ciphertext in
/// the pair's two ring buffers; the connection moves it between those buffers and its non-blocking socket
/// (`recv` straight into the pair, `send` straight out of it: no extra copy). OpenSSL never touches the
/// socket, so the connection's event loop keeps owning the socket and the wait, and one loop thread still
/// drives many connections. Used by one thread at a time; frees the session and the pair in `deinit`.
final class TLSChannel {
    private let ssl: OpaquePointer
    /// Our end of the pair: ciphertext from the socket is written here, ciphertext for the socket read here.
    private let network: OpaquePointer
    /// The session's end of the pair (owned by the session).
    private let inner: OpaquePointer
    private let verifies: Bool
    /// Set when a TLS (not socket) error ended a read or write: the connection reports it as is.
    private(set) var failure: H2Error?
    /// The last `read` stopped because the plaintext buffer was full: OpenSSL may hold more (decrypted, or
    /// ciphertext already taken off the socket), which no socket event will announce.
    private var stoppedFull = false
    /// The last `read` stopped because OpenSSL had to write (a post-handshake message) and the pair was full.
    private var readWaitsForWrite = false

    /// Bytes each direction of the pair buffers: more than one full TLS record (16 KiB + overhead).
    static let pairBufferSize = 1 << 16

    /// A client session for `host`: SNI and the certificate's name check use it (an IP address is checked
    /// against the certificate's IP entries and sends no SNI, as RFC 6066 requires).
    init(context: TLSContext, host: String) throws {
        guard let ssl = SSL_new(context.context) else { throw H2Error(.tls, detail: "SSL_new: \(openSSLErrorText())") }
        var inner: OpaquePointer?
        var outer: OpaquePointer?
        guard BIO_new_bio_pair(&inner, TLSChannel.pairBufferSize, &outer, TLSChannel.pairBufferSize) == 1, let inner, let outer else {
            SSL_free(ssl)
            throw H2Error(.tls, detail: "BIO_new_bio_pair: \(openSSLErrorText())")
        }
        SSL_set_bio(ssl, inner, inner)  // the session owns its end
        SSL_set_connect_state(ssl)
        let isAddress = TLSChannel.isIPAddress(host)
        var ok = true
        if !isAddress { ok = glimpse_SSL_set_tlsext_host_name(ssl, host) == 1 }
        if ok && context.options.verifyCertificate {
            ok = isAddress ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 : SSL_set1_host(ssl, host) == 1
        }
        guard ok else {
            SSL_free(ssl)
            BIO_free(outer)
            throw H2Error(.tls, detail: "cannot use \(host) as the TLS server name: \(openSSLErrorText())")
        }
        self.ssl = ssl
        self.inner = inner
        network = outer
        verifies = context.options.verifyCertificate
    }

    deinit {
        SSL_free(ssl)
        BIO_free(network)
    }

    private static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// Ciphertext waits in the pair for the socket.
    var hasPendingOutput: Bool { BIO_ctrl_pending(network) > 0 }

    /// `read` should run again without waiting for the socket (see `stoppedFull`, `readWaitsForWrite`).
    var hasBufferedInput: Bool { stoppedFull || (readWaitsForWrite && !hasPendingOutput) }

    // MARK: - Handshake

    /// Runs the client handshake on the connected non-blocking `socket`, waiting with `poll` for at most
    /// `timeoutMs`, then checks that the server selected "h2". Throws `H2Error(.tls)` (`.connectionClosed`
    /// for a socket error), with the reason: certificate verification, ALPN, an alert, a timeout.
    func handshake(over socket: PosixSocket, peer: String, timeoutMs: Int) throws {
        let deadline = MonotonicClock.now() &+ UInt64(timeoutMs) * 1_000_000
        ERR_clear_error()
        while true {
            let rc = SSL_do_handshake(ssl)
            let code = rc == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl, rc)
            if case .failed(let error) = sendPending(to: socket) { throw error }
            if rc == 1 { break }
            var events = Int16(0)
            switch code {
            case SSL_ERROR_WANT_READ:
                var drained = false
                switch receive(from: socket, drained: &drained) {
                case .bytes: continue
                case .wouldBlock: events = Int16(POLLIN)
                case .eof:
                    throw H2Error(.tls, detail: "TLS handshake with \(peer) failed: the server closed the connection")
                case .failed(let text):
                    throw H2Error(.connectionClosed, detail: "TLS handshake with \(peer): recv: \(text)")
                }
            case SSL_ERROR_WANT_WRITE:
                events = Int16(POLLOUT)
            default:
                throw handshakeError(code, peer: peer)
            }
            if hasPendingOutput { events |= Int16(POLLOUT) }
            let now = MonotonicClock.now()
            guard now < deadline else {
                throw H2Error(.tls, detail: "TLS handshake with \(peer) timed out after \(timeoutMs) ms")
            }
            var pfd = pollfd(fd: socket.fd, events: events, revents: 0)
            let waitMs = Int32(min((deadline - now + 999_999) / 1_000_000, UInt64(Int32.max)))
            if poll(&pfd, 1, waitMs) < 0 && errno != EINTR {
                throw H2Error(.connectionClosed, detail: "TLS handshake with \(peer): poll: \(String(cString: strerror(errno)))")
            }
        }
        var protocolName: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &protocolName, &length)
        let selected = protocolName.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self) } ?? ""
        guard selected == "h2" else {
            let what = selected.isEmpty ? "no protocol" : "\"\(selected)\""
            throw H2Error(.tls, detail: "TLS handshake with \(peer): the server did not select HTTP/2 in ALPN (offered \"h2\", it chose \(what))")
        }
    }

    private func handshakeError(_ code: Int32, peer: String) -> H2Error {
        let library = openSSLErrorText()
        let result = SSL_get_verify_result(ssl)
        if verifies && result != X509_V_OK {
            let reason = X509_verify_cert_error_string(result).map { String(cString: $0) } ?? "error \(result)"
            return H2Error(.tls, detail: "TLS handshake with \(peer) failed: certificate verification failed: \(reason)")
        }
        let what = code == SSL_ERROR_SYSCALL ? "the connection broke" : library
        return H2Error(.tls, detail: "TLS handshake with \(peer) failed: \(what)")
    }

    // MARK: - Ciphertext between the pair and the socket

    enum SendOutcome { case drained, wouldBlock, failed(H2Error) }

    /// Sends the ciphertext waiting in the pair until it is empty or the socket is full.
    func sendPending(to socket: PosixSocket) -> SendOutcome {
        while true {
            var start: UnsafeMutablePointer<CChar>?
            let available = BIO_nread0(network, &start)
            guard available > 0, let bytes = start else { return .drained }
            switch socket.write(UnsafeRawBufferPointer(start: bytes, count: Int(available))) {
            case .bytes(let n):
                _ = BIO_nread(network, &start, Int32(n))
                if n < available { return .wouldBlock }
            case .wouldBlock: return .wouldBlock
            case .eof: return .failed(H2Error(.connectionClosed, detail: "send: connection closed"))
            case .failed(let text): return .failed(H2Error(.connectionClosed, detail: "send: \(text)"))
            }
        }
    }

    /// Receives ciphertext from the socket into the pair (one `recv`, up to the pair's free contiguous space).
    /// `drained`: the `recv` came back short, so the socket is empty as far as a read can tell.
    private func receive(from socket: PosixSocket, drained: inout Bool) -> PosixSocket.IOResult {
        var start: UnsafeMutablePointer<CChar>?
        let space = BIO_nwrite0(network, &start)
        guard space > 0, let free = start else {
            return .failed("TLS input buffer full")  // OpenSSL asks for input only once it has taken what is there
        }
        let result = socket.read(into: UnsafeMutableRawBufferPointer(start: free, count: Int(space)))
        if case .bytes(let n) = result {
            _ = BIO_nwrite(network, &start, Int32(n))
            drained = n < Int(space)
        }
        return result
    }

    // MARK: - Application data

    /// Fills `buffer` with plaintext, receiving from the socket as OpenSSL asks. A count below
    /// `buffer.count` means the socket had no more for now (as a short `recv` does). On `.failed`, `failure`
    /// holds a TLS error (nil: the text is a socket error).
    func read(into buffer: UnsafeMutableRawBufferPointer, from socket: PosixSocket) -> PosixSocket.IOResult {
        guard let base = buffer.baseAddress else { return .bytes(0) }
        stoppedFull = false
        readWaitsForWrite = false
        clearErrors()
        var filled = 0
        // After a short `recv` the next one would only say EAGAIN: stop there (the wait reports new data).
        var drained = false
        while filled < buffer.count {
            let n = SSL_read(ssl, base + filled, Int32(clamping: buffer.count - filled))
            if n > 0 {
                filled += Int(n)
                // All that was received is decrypted and handed out: skip the call that would say WANT_READ.
                if drained && SSL_pending(ssl) == 0 && BIO_ctrl_pending(inner) == 0 { return .bytes(filled) }
                continue
            }
            let code = SSL_get_error(ssl, n)
            if code == SSL_ERROR_WANT_READ {
                if drained { return filled > 0 ? .bytes(filled) : .wouldBlock }
                let result = receive(from: socket, drained: &drained)
                if case .bytes = result { continue }
                return filled > 0 ? .bytes(filled) : result
            }
            if code == SSL_ERROR_WANT_WRITE {
                switch sendPending(to: socket) {
                case .drained: continue
                case .wouldBlock:
                    readWaitsForWrite = true
                    return filled > 0 ? .bytes(filled) : .wouldBlock
                case .failed(let error):
                    failure = error
                    return filled > 0 ? .bytes(filled) : .failed(error.detail)
                }
            }
            if filled > 0 { return .bytes(filled) }  // the same condition comes back on the next call
            if code == SSL_ERROR_ZERO_RETURN { return .eof }  // close_notify
            let error = H2Error(.tls, detail: "TLS read: \(code == SSL_ERROR_SYSCALL ? "the connection broke" : openSSLErrorText())")
            failure = error
            return .failed(error.detail)
        }
        stoppedFull = true
        return .bytes(filled)
    }

    /// Encrypts from `buffer` into the pair and sends what the socket takes. Returns the plaintext bytes
    /// taken; `.wouldBlock` when the pair is full and the socket is too. After `.wouldBlock` the caller must
    /// offer the same bytes again (OpenSSL may have taken part of them). On `.failed`, `failure` is set.
    func write(_ buffer: UnsafeRawBufferPointer, to socket: PosixSocket) -> PosixSocket.IOResult {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .bytes(0) }
        clearErrors()
        while true {
            let n = SSL_write(ssl, base, Int32(clamping: buffer.count))
            let code = n > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl, n)
            switch sendPending(to: socket) {
            case .drained:
                if n > 0 { return .bytes(Int(n)) }
                if code == SSL_ERROR_WANT_WRITE { continue }  // the pair has room again
            case .wouldBlock:
                if n > 0 { return .bytes(Int(n)) }
                if code == SSL_ERROR_WANT_WRITE { return .wouldBlock }
            case .failed(let error):
                failure = error
                return .failed(error.detail)
            }
            if code == SSL_ERROR_WANT_READ { return .wouldBlock }  // no renegotiation in TLS 1.3; reads go on
            let error = H2Error(.tls, detail: "TLS write: \(code == SSL_ERROR_SYSCALL ? "the connection broke" : openSSLErrorText())")
            failure = error
            return .failed(error.detail)
        }
    }

    /// Empties this thread's OpenSSL error queue, so `SSL_get_error` reports on this call only (a peek
    /// costs less than a clear, and the queue is almost always empty).
    @inline(__always)
    private func clearErrors() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }

    /// Queues close_notify (sent by the connection's last flush).
    func close() {
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }
}
