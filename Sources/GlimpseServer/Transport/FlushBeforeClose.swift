import NIOCore

/// Lets a close wait until the frames already on their way are written and flushed.
///
/// Hummingbird's HTTP/2 connection manager closes the connection as soon as the last stream of a
/// graceful shutdown ends. It learns that from the stream-closed event, which `NIOHTTP2Handler` raises
/// while it is still processing the stream's final frame, before writing it on. A close at that point
/// drops the last response. Placed right after `NIOHTTP2Handler`, this defers the close to the next
/// event-loop tick, then flushes and closes, so a drain answers every accepted request.
final class FlushBeforeClose: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            loopBound.value.flush()
            loopBound.value.close(mode: mode, promise: promise)
        }
    }
}
