import CNGHTTP2
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP2

/// Serves an HTTP/2 connection with libnghttp2 (`HTTP2Options.transport == .nghttp2`), on the
/// connection's byte stream: in place of `NIOHTTP2Handler`, `HTTP2ConnectionManager` and
/// `HTTP2FrameResponder`, with the same behaviour.
///
/// Received bytes go to the `NGHTTP2Session`, whose callbacks (`NGHTTP2Responder+Callbacks`) collect
/// each request (`NGHTTP2IncomingRequest`). A complete request is dispatched as `HTTP2FrameResponder`
/// does: `InlineRoutes` answered in place, the rest by the router in a task whose answer is submitted
/// back on the event loop; a reset stream cancels its task, a closed connection all of them. What
/// the session queues is written once per read turn, or once per batch of task answers.
///
/// The connection's life (idle timeout, graceful drain with GOAWAY and PING) is `HTTP2ConnectionLife`,
/// as for NIOHTTP2 (`HTTP2ConnectionManager`).
final class NGHTTP2Responder: ChannelInboundHandler, HTTP2ConnectionLifeOwner {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let serving: GlimpseHTTPChannel.FrameServing
    private var logger: Logger { serving.logger }
    var maxBody: Int { serving.maxBody }
    let maxHeaderListSize: Int
    private let settings: NGHTTP2Session.Settings

    private var session: NGHTTP2Session?
    private var context: ChannelHandlerContext?
    /// Requests still arriving, by stream.
    var requests: [Int32: NGHTTP2IncomingRequest] = [:]
    /// Response bodies still being sent, by stream.
    var bodies: [Int32: ByteBuffer] = [:]
    /// Requests running in tasks, by stream.
    private var running: [Int32: Task<Void, Never>] = [:]
    private let life: HTTP2ConnectionLife
    private var flushScheduled = false
    /// The session sent GOAWAY with an error: the connection closes once it is written.
    var terminating = false

    init(serving: GlimpseHTTPChannel.FrameServing, http2: HTTP2Options, timeouts: ConnectionTimeouts, eventLoop: any EventLoop) {
        self.serving = serving
        self.maxHeaderListSize = http2.maxHeaderListSize
        self.settings = NGHTTP2Session.Settings(
            maxConcurrentStreams: http2.maxConcurrentStreams, initialWindowSize: http2.initialWindowSize,
            maxFrameSize: http2.maxFrameSize, maxHeaderListSize: http2.maxHeaderListSize,
            connectionWindowSize: http2.connectionWindowSize)
        life = HTTP2ConnectionLife(eventLoop: eventLoop, idleTimeout: timeouts.idle, gracefulCloseTimeout: timeouts.gracefulClose)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        do {
            session = try NGHTTP2Session(settings: settings, userData: Unmanaged.passUnretained(self).toOpaque(),
                                         install: Self.installCallbacks)
        } catch {
            logger.error("cannot start an HTTP/2 session", metadata: ["error": "\(error)"])
            context.close(promise: nil)
            return
        }
        life.start(owner: self)
        writeOutput(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        shutDown()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        shutDown()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session, !terminating else { return }
        do {
            try session.receive(unwrapInboundIn(data))
        } catch {
            // Fatal for the connection (bad preface, flood, ...): whatever the session queued (a GOAWAY)
            // goes out, then the connection closes.
            logger.debug("HTTP/2 connection error", metadata: ["error": "\(error)"])
            terminating = true
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        writeOutput(context)
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        life.channelEvent(event)
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        life.close()
    }

    // MARK: output

    /// Writes and flushes what the session has queued; closes the connection once it is finished.
    private func writeOutput(_ context: ChannelHandlerContext) {
        guard let session else { return }
        if session.wantsWrite {
            var buffer = context.channel.allocator.buffer(capacity: 1024)
            do {
                try session.output(into: &buffer)
            } catch {
                logger.debug("HTTP/2 connection error", metadata: ["error": "\(error)"])
                terminating = true
            }
            if buffer.readableBytes > 0 {
                context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            }
        }
        if terminating { life.close() }
    }

    /// One write and flush for every answer submitted before the event loop's next turn.
    private func scheduleOutput() {
        guard !flushScheduled, let context else { return }
        flushScheduled = true
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let handler = bound.value
            handler.flushScheduled = false
            if let context = handler.context { handler.writeOutput(context) }
        }
    }

    private func shutDown() {
        life.stop()
        for task in running.values { task.cancel() }
        running.removeAll()
        requests.removeAll()
        bodies.removeAll()
        // Freed while this handler (its callbacks' user data) is alive.
        session = nil
    }

    // MARK: requests

    /// A request's header block is complete.
    func requestHeadersReceived(_ id: Int32, endStream: Bool) {
        guard var request = requests[id] else { return }
        if request.headersTooLarge {
            requests[id] = nil
            submit(id, head: HTTPResponse(status: .requestHeaderFieldsTooLarge), body: ByteBuffer(), method: .get)
            return
        }
        guard let head = request.headersComplete() else {
            requests[id] = nil
            reset(id, code: NGHTTP2_PROTOCOL_ERROR)
            return
        }
        if endStream {
            requests[id] = nil
            guard !request.lengthMismatch(bodyBytes: 0) else { return reset(id, code: NGHTTP2_PROTOCOL_ERROR) }
            dispatch(id, head: head, body: ByteBuffer())
        } else if request.declaresMoreThan(maxBody) {
            request.refused = true
            requests[id] = request
            dispatch(id, head: head, body: nil)
        } else {
            requests[id] = request
        }
    }

    /// A request's body ended (its last DATA frame, or trailers).
    func requestEnded(_ id: Int32) {
        guard let request = requests.removeValue(forKey: id), !request.refused, let head = request.head else { return }
        guard !request.lengthMismatch(bodyBytes: request.body.readableBytes) else { return reset(id, code: NGHTTP2_PROTOCOL_ERROR) }
        dispatch(id, head: head, body: request.body)
    }

    /// Body bytes arrived for a request.
    func requestData(_ id: Int32, _ bytes: UnsafeRawBufferPointer) {
        guard let index = requests.index(forKey: id) else { return }
        if !requests.values[index].append(bytes, maxBody: maxBody), let head = requests.values[index].head {
            dispatch(id, head: head, body: nil)
        }
    }

    func streamOpened(_ id: Int32) {
        requests[id] = NGHTTP2IncomingRequest()
        life.streamCreated(HTTP2StreamID(id))
    }

    func streamClosed(_ id: Int32) {
        requests[id] = nil
        bodies[id] = nil
        running.removeValue(forKey: id)?.cancel()
        life.streamClosed(HTTP2StreamID(id))
    }

    func pingAcknowledged(_ data: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)) {
        life.pingAcknowledged(HTTP2PingData(withTuple: data))
    }

    /// Answers a request; `body` nil: its body was over the limit, and reading it fails, so its
    /// route answers with its own "too large" error.
    private func dispatch(_ id: Int32, head: HTTPRequest, body: ByteBuffer?) {
        guard let context else { return }
        if let answer = serving.inline.answer(head) {
            submit(id, head: answer.head, body: answer.body, method: head.method)
            return
        }
        let method = head.method, loop = context.eventLoop
        let bound = NIOLoopBound(self, eventLoop: loop)
        running[id] = serving.run(head, body: body, channel: context.channel) { answer in
            loop.execute { bound.value.finish(id, head: answer.head, body: answer.body, method: method) }
        }
    }

    /// A task's response is ready: submitted unless its stream was reset meanwhile.
    private func finish(_ id: Int32, head: HTTPResponse, body: ByteBuffer, method: HTTPRequest.Method) {
        guard running.removeValue(forKey: id) != nil else { return }
        submit(id, head: head, body: body, method: method)
        scheduleOutput()
    }

    private func submit(_ id: Int32, head: HTTPResponse, body: ByteBuffer, method: HTTPRequest.Method) {
        guard let session else { return }
        let hasBody = body.readableBytes > 0 && method != .head
        if hasBody { bodies[id] = body }
        do {
            try session.submitResponse(stream: id, head: head, bodyBytes: body.readableBytes, body: hasBody ? Self.readBody : nil)
        } catch {
            bodies[id] = nil
            logger.debug("HTTP/2 response not submitted", metadata: ["stream": "\(id)", "error": "\(error)"])
            reset(id, code: NGHTTP2_INTERNAL_ERROR)
        }
    }

    /// Copies up to `length` bytes of stream `id`'s response body to `buffer`; the number copied.
    func readBody(_ id: Int32, into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, end: Bool) {
        guard let index = bodies.index(forKey: id) else { return (0, true) }
        let count = bodies.values[index].readWithUnsafeReadableBytes { source in
            let count = min(source.count, buffer.count)
            if count > 0, let from = source.baseAddress, let to = buffer.baseAddress { to.copyMemory(from: from, byteCount: count) }
            return count
        }
        guard bodies.values[index].readableBytes == 0 else { return (count, false) }
        bodies.remove(at: index)
        return (count, true)
    }

    func reset(_ id: Int32, code: nghttp2_error_code) {
        do { try session?.submitReset(stream: id, code: code) } catch {
            logger.debug("HTTP/2 reset not submitted", metadata: ["stream": "\(id)", "error": "\(error)"])
        }
    }

    // MARK: connection life (HTTP2ConnectionLifeOwner)

    func beginDrain(ping: HTTP2PingData) {
        do {
            try session?.submitShutdownNotice()
            try session?.submitPing(ping.bytes)
        } catch {
            logger.debug("HTTP/2 drain not submitted", metadata: ["error": "\(error)"])
        }
        scheduleOutput()
    }

    func sendFinalGoAway(lastStreamID: HTTP2StreamID) {
        do { try session?.submitGoAway(lastStreamID: Int32(lastStreamID)) } catch {
            logger.debug("HTTP/2 GOAWAY not submitted", metadata: ["error": "\(error)"])
        }
        // Never written at once: a PING's acknowledgement arrives inside the session's own parsing.
        scheduleOutput()
    }

    /// Closes after the frames queued so far are written (a stream's last frame may still be queued
    /// when it closes).
    func closeAfterPendingWrites() {
        guard let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let handler = bound.value
            guard let context = handler.context else { return }
            handler.terminating = false
            handler.writeOutput(context)
            context.close(promise: nil)
        }
    }
}
