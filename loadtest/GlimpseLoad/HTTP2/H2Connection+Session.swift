import CNGHTTP2

/// Per-stream state, owned by the connection's loop thread.
final class H2StreamState {
    var id: Int32 = 0
    let request: H2Request
    let completion: H2Completion
    let submitted: UInt64
    let deadline: UInt64
    var headersSent: UInt64 = 0
    var bodyOffset = 0
    var status = 0
    var headers: [(String, String)] = []
    var body: [UInt8] = []

    init(request: H2Request, completion: @escaping H2Completion, submitted: UInt64, deadline: UInt64) {
        self.request = request
        self.completion = completion
        self.submitted = submitted
        self.deadline = deadline
    }
}

extension H2Connection: NGHTTP2SessionHandler {
    func sessionReceivedHeader(stream: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let state = streams[stream] else { return }
        if name.count == 7, name.elementsEqual(":status".utf8) {
            state.status = Self.parseInt(value)
        } else if name.first != UInt8(ascii: ":") {
            state.headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
    }

    func sessionReceivedData(stream: Int32, _ data: UnsafeBufferPointer<UInt8>) {
        streams[stream]?.body.append(contentsOf: data)
    }

    func sessionSentHeaders(stream: Int32) {
        streams[stream]?.headersSent = MonotonicClock.now()
    }

    func sessionClosedStream(stream: Int32, errorCode: UInt32) {
        guard let state = streams.removeValue(forKey: stream) else { return }
        if errorCode != NGHTTP2_NO_ERROR.rawValue {
            finished.append((state, .failure(H2Error.reset(errorCode))))
        } else if state.status == 0 {
            finished.append((state, .failure(H2Error(.streamReset, detail: "stream closed without a response"))))
        } else {
            finished.append((state, .success(H2Response(status: state.status, headers: state.headers, body: state.body))))
        }
    }

    func sessionReceivedGoaway(lastStream: Int32, errorCode: UInt32) {
        let name = nghttp2_http2_strerror(errorCode).map { String(cString: $0) } ?? String(errorCode)
        goawayDetail = "GOAWAY from server: \(name), last stream \(lastStream)"
    }

    func sessionReadBody(stream: Int32, into buffer: UnsafeMutableRawBufferPointer) -> (Int, Bool) {
        guard let state = streams[stream], let body = state.request.body else { return (0, true) }
        let count = min(buffer.count, body.count - state.bodyOffset)
        if count > 0 {
            body.withUnsafeBytes { src in
                if let from = src.baseAddress, let to = buffer.baseAddress {
                    to.copyMemory(from: from + state.bodyOffset, byteCount: count)
                }
            }
        }
        state.bodyOffset += count
        return (count, state.bodyOffset >= body.count)
    }

    private static func parseInt(_ digits: UnsafeBufferPointer<UInt8>) -> Int {
        var value = 0
        for d in digits {
            guard d >= 48 && d <= 57 else { return 0 }
            value = value * 10 + Int(d - 48)
        }
        return value
    }
}
