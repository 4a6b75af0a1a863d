import NIOCore

/// One flush per turn of a connection's reads: a response written while the connection's reads are
/// being handled waits for `channelReadComplete`, which flushes all of them at once; one written
/// outside a read turn (a task's response) is the caller's to flush.
struct ReadTurnFlush {
    private var reading = false
    private var pending = false

    mutating func readStarted() { reading = true }

    /// After a write: true when the caller must flush (outside a read turn).
    mutating func wrote() -> Bool {
        if reading { pending = true }
        return !reading
    }

    mutating func readComplete(_ context: ChannelHandlerContext) {
        reading = false
        if pending {
            pending = false
            context.flush()
        }
    }
}
