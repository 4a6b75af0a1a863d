import NIOCore
import NIOTLS

/// Tells HTTP/2 prior-knowledge connections (h2c) from HTTP/1.1 ones on one plaintext port.
///
/// It holds the first bytes until it can see whether they are the HTTP/2 client connection preface
/// (`PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`, RFC 9113 §3.4). It then reports the choice the way TLS reports
/// ALPN, as `TLSUserEvent.handshakeCompleted(negotiatedProtocol: "h2" | nil)`, so the standard
/// protocol-negotiation handler configures the pipeline, and removes itself, passing the bytes on.
final class PriorKnowledgeSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    private var buffered: ByteBuffer?
    private var decided = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        guard !decided else {
            context.fireChannelRead(data)
            return
        }
        if buffered == nil {
            buffered = incoming
        } else {
            buffered!.writeBuffer(&incoming)
        }
        guard let bytes = buffered else { return }
        let prefix = bytes.readableBytesView.prefix(Self.preface.count)
        let matches = prefix.elementsEqual(Self.preface.prefix(prefix.count))
        if matches && prefix.count < Self.preface.count { return }  // need more bytes
        decided = true
        context.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: matches ? "h2" : nil))
        buffered = nil
        context.fireChannelRead(wrapInboundOut(bytes))
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !decided, let bytes = buffered, bytes.readableBytes > 0 {
            decided = true
            context.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: nil))
            buffered = nil
            context.fireChannelRead(wrapInboundOut(bytes))
        }
        context.fireChannelInactive()
    }
}
