import NIOCore
import NIOHTTPTypes

/// Time limits of a connection.
struct ConnectionTimeouts: Sendable {
    /// From accept until the protocol is known (TLS handshake, h2c preface), and until the first
    /// HTTP/1.1 request head is complete. Later requests on a kept-alive connection fall under `idle`.
    var header: TimeAmount
    /// A connection with no request in progress for this long is closed (HTTP/2: GOAWAY first).
    var idle: TimeAmount
    /// After the final GOAWAY of a drain, streams still open after this long are cut off.
    var gracefulClose: TimeAmount
}

/// Closes a connection whose protocol is not known in time: a stalled TLS handshake, or a client that
/// connects and sends nothing. Removed as soon as the protocol is negotiated.
final class HandshakeTimeout: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context: context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    private func arm(context: ChannelHandlerContext) {
        guard timer == nil else { return }
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: timeout) { bound.value.close(promise: nil) }
    }
}

/// HTTP/1.1: the first request head must be complete within the header timeout. A client trickling
/// header bytes (slowloris) is disconnected instead of holding the connection. Removed once a head
/// arrives; after that the connection's idle timeout applies.
final class RequestHeadTimeout: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: timeout) { bound.value.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let isHead: Bool
        if case .head = unwrapInboundIn(data) { isHead = true } else { isHead = false }
        context.fireChannelRead(data)
        if isHead, timer != nil {
            timer?.cancel()
            timer = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }
}
