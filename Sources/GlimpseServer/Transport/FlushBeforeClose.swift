import NIOCore

/// Flushes before a close passes through.
///
/// Hummingbird's HTTP/2 connection manager closes the connection as soon as the last stream of a
/// graceful shutdown ends; frames of that stream's response still buffered in the HTTP/2 handler would
/// be dropped by the close. Placed right after `NIOHTTP2Handler`, this makes them reach the socket
/// first, so a drain answers every accepted request.
final class FlushBeforeClose: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        context.flush()
        context.close(mode: mode, promise: promise)
    }
}
