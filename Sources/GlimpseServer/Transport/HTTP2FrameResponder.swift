import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import Synchronization

/// Answers an HTTP/2 connection's requests from its frames, on the connection's event loop: no
/// child channel, pipeline or task per stream, and one flush for all the responses ready at once.
///
/// `HTTP2RequestAssembler` collects each request. Requests the server answers without waiting
/// (`InlineRoutes`: health and readiness) are answered in place; every other request runs the
/// router in a task, whose response is written back on the event loop. A reset stream cancels its
/// task; a closed connection (or the end of its input) cancels them all.
final class HTTP2FrameResponder: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private var assembler: HTTP2RequestAssembler
    private let serving: GlimpseHTTPChannel.FrameServing
    private var context: ChannelHandlerContext?
    /// Requests running in tasks, by stream.
    private var running: [HTTP2StreamID: Task<Void, Never>] = [:]
    private var flushScheduled = false
    private var flushing = ReadTurnFlush()

    init(serving: GlimpseHTTPChannel.FrameServing, http2: HTTP2Options) {
        self.serving = serving
        assembler = HTTP2RequestAssembler(maxBody: serving.maxBody, streamWindow: http2.initialWindowSize,
                                          connectionWindow: http2.connectionWindowSize)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if let credit = assembler.initialConnectionCredit {
            perform(credit, context: context)
            context.flush()
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelAll()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelAll()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        flushing.readStarted()
        // A reset stream's task is cancelled on its `StreamClosedEvent`, which NIOHTTP2 sends for
        // every stream that closes, reset or not.
        for action in assembler.receive(unwrapInboundIn(data)) { perform(action, context: context) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushing.readComplete(context)
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Told apart by type identity first (as in `HTTP2ConnectionManager`): most events are neither.
        let kind = ObjectIdentifier(type(of: event))
        if kind == Self.windowUpdated, let e = event as? NIOHTTP2WindowUpdatedEvent {
            if let size = e.inboundWindowSize, let credit = assembler.windowChanged(e.streamID, inboundWindow: size) {
                perform(credit, context: context)
                scheduleFlush(context)
            }
        } else if kind == Self.streamClosed, let e = event as? StreamClosedEvent {
            assembler.streamClosed(e.streamID)
            running.removeValue(forKey: e.streamID)?.cancel()
        } else if let e = event as? ChannelEvent, e == .inputClosed {
            // An HTTP/2 client ends its streams with END_STREAM, never with TCP: end of input is the
            // client closing its socket (h2load stopping, a process exiting), which will take no answer.
            // Its requests are cancelled: queued ones leave the queue, running ones' results are dropped.
            cancelAll()
        }
        context.fireUserInboundEventTriggered(event)
    }

    private static let windowUpdated = ObjectIdentifier(NIOHTTP2WindowUpdatedEvent.self)
    private static let streamClosed = ObjectIdentifier(StreamClosedEvent.self)

    // MARK: actions

    private func perform(_ action: HTTP2RequestAssembler.Action, context: ChannelHandlerContext) {
        switch action {
        case .dispatch(let id, let head, let body):
            dispatch(id, head: head, body: body, context: context)
        case .dispatchTooLarge(let id, let head):
            dispatch(id, head: head, body: nil, context: context)
        case .resetMalformed(let id):
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.protocolError))), promise: nil)
            noteWrite(context)
        case .windowUpdate(let id, let increment):
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .windowUpdate(windowSizeIncrement: increment))), promise: nil)
        }
    }

    /// Answers a request; `body` nil: its body was over the limit, and reading it fails, so its
    /// route answers with its own "too large" error.
    private func dispatch(_ id: HTTP2StreamID, head: HTTPRequest, body: ByteBuffer?, context: ChannelHandlerContext) {
        if let answer = serving.inline.answer(head) {
            write(answer.head, body: answer.body, to: id, method: head.method, context: context)
            return
        }
        let method = head.method, loop = context.eventLoop
        let bound = NIOLoopBound(self, eventLoop: loop)
        running[id] = serving.run(head, body: body, channel: context.channel) { answer in
            loop.execute { bound.value.finish(id, head: answer.head, body: answer.body, method: method) }
        }
    }

    /// A task's response is ready: written unless its stream was reset meanwhile.
    private func finish(_ id: HTTP2StreamID, head: HTTPResponse, body: ByteBuffer, method: HTTPRequest.Method) {
        guard let context, running.removeValue(forKey: id) != nil else { return }
        write(head, body: body, to: id, method: method, context: context)
        scheduleFlush(context)
    }

    private func write(_ head: HTTPResponse, body: ByteBuffer, to id: HTTP2StreamID, method: HTTPRequest.Method,
                       context: ChannelHandlerContext) {
        let headers = Self.responseHeaders(head, bodyBytes: body.readableBytes)
        let empty = body.readableBytes == 0 || method == .head
        context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: empty)))), promise: nil)
        if !empty {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(body), endStream: true)))), promise: nil)
        }
        noteWrite(context)
    }

    /// The header block of a response: `:status`, then its fields (`HTTP2FieldRules`), each marked
    /// for HPACK's dynamic table or not (`HTTP2FieldRules.isWorthIndexing`).
    static func responseHeaders(_ head: HTTPResponse, bodyBytes: Int) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(head.headerFields.count + 4)
        headers.add(name: ":status", value: String(head.status.code))
        HTTP2FieldRules.forEachResponseField(head, bodyBytes: bodyBytes) {
            headers.add(name: $0, value: $1, indexing: HTTP2FieldRules.isWorthIndexing($0) ? .indexable : .nonIndexable)
        }
        return headers
    }

    private func noteWrite(_ context: ChannelHandlerContext) {
        if flushing.wrote() { scheduleFlush(context) }
    }

    /// One flush for every response written before the event loop's next turn.
    private func scheduleFlush(_ context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let handler = bound.value
            handler.flushScheduled = false
            handler.context?.flush()
        }
    }

    private func cancelAll() {
        for task in running.values { task.cancel() }
        running.removeAll()
    }
}

/// A router response with its body in one buffer.
struct CollectedResponse: Sendable {
    let head: HTTPResponse
    let body: ByteBuffer
}

/// The router's response, with its body collected (every Glimpse route answers with one buffer).
func respondCollecting(_ request: Request, context: BasicRequestContext, responder: RouterResponder<BasicRequestContext>,
                       logger: Logger) async -> CollectedResponse {
    do {
        let response = try await responder.respond(to: request, context: context)
        let collector = BodyCollector()
        try await response.body.write(collector.writer)
        return CollectedResponse(head: response.head, body: collector.buffer)
    } catch {
        logger.debug("request failed", metadata: ["error": "\(error)"])
        return CollectedResponse(head: HTTPResponse(status: .internalServerError, headerFields: [.contentLength: "0"]), body: ByteBuffer())
    }
}

/// The body of a request over the size limit: reading it fails.
struct TooLargeBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    struct TooLarge: Error {}
    struct AsyncIterator: AsyncIteratorProtocol {
        mutating func next() async throws -> ByteBuffer? { throw TooLarge() }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator() }
}

/// Collects a response body's buffers.
private final class BodyCollector: @unchecked Sendable {
    var buffer = ByteBuffer()

    var writer: Writer { Writer(collector: self) }

    struct Writer: ResponseBodyWriter {
        let collector: BodyCollector
        mutating func write(_ buffer: ByteBuffer) async throws {
            var buffer = buffer
            collector.buffer.writeBuffer(&buffer)
        }
        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}

extension HTTPResponse {
    /// The response as the server sends it: `content-length` (when the route set none), `date` (RFC 9110
    /// §6.6.1: an origin server with a clock sends one) and `server`. The HTTP/1.1 responder calls it;
    /// the HTTP/2 ones write the same fields through `HTTP2FieldRules.forEachResponseField`.
    func completed(bodyBytes: Int) -> HTTPResponse {
        var head = self
        HTTP2FieldRules.forEachDefaultField(self, bodyBytes: bodyBytes) { head.headerFields.append(HTTPField(name: $0, value: $1)) }
        return head
    }
}

/// The `date` header's value (RFC 9110 §5.6.7), formatted at most once a second.
enum HTTPDate {
    private static let cache = Mutex<(second: Int, text: String)>((-1, ""))

    static var now: String {
        let second = Int(Date().timeIntervalSince1970)
        return cache.withLock { c in
            if c.second != second { c = (second, format(second)) }
            return c.text
        }
    }

    static func format(_ second: Int) -> String {
        var t = time_t(second)
        var parts = tm()
        gmtime_r(&t, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
