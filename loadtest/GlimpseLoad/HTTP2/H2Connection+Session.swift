import CNGHTTP2

/// Receives the completions of streams submitted with `H2Connection.submitOnLoop(block:body:...)`
/// (the load driver's path: no closure per request). Called on the connection's loop thread; `state`
/// is finished (`failure` set, or a response in `status` / `body`) and must not be kept.
protocol H2StreamSink: AnyObject {
    func streamFinished(_ state: H2StreamState, timing: H2Timing)
}

/// Per-stream state, owned by the connection's loop thread (retained by `H2Connection.slots` while
/// open, then by the finished list until delivered; nghttp2 holds it unretained as the stream's user data).
/// Delivered states nobody else holds are recycled (`reuse`), so a request allocates no state object
/// and, on the driver's path, no new response body buffer.
final class H2StreamState {
    var id: Int32 = 0
    /// Index in `H2Connection.slots` while open.
    var slot = -1
    var requestBody: [UInt8]?
    /// The caller's completion; nil: report to the connection's `H2StreamSink` (with `tag` and `flag`).
    var completion: H2Completion?
    var tag: UInt64
    var flag: Bool
    var submitted: UInt64
    var deadline: UInt64
    @exclusivity(unchecked) var headersSent: UInt64 = 0
    @exclusivity(unchecked) var bodyOffset = 0
    @exclusivity(unchecked) var status = 0
    @exclusivity(unchecked) var headers: [(String, String)] = []
    @exclusivity(unchecked) var body: [UInt8] = []
    /// Why the stream failed, once it has.
    var failure: H2Error?

    init(requestBody: [UInt8]?, completion: H2Completion?, tag: UInt64 = 0, flag: Bool = false, submitted: UInt64, deadline: UInt64) {
        self.requestBody = requestBody
        self.completion = completion
        self.tag = tag
        self.flag = flag
        self.submitted = submitted
        self.deadline = deadline
    }

    /// Makes a delivered state fresh for a new request.
    func reuse(requestBody: [UInt8]?, completion: H2Completion?, tag: UInt64, flag: Bool, submitted: UInt64, deadline: UInt64) {
        self.requestBody = requestBody
        self.completion = completion
        self.tag = tag
        self.flag = flag
        self.submitted = submitted
        self.deadline = deadline
    }

    /// Drops what a delivered state still holds; keeps the body buffer where no response shares it.
    func clear() {
        if completion != nil {
            body = []  // handed out in an H2Response
            headers = []
        } else {
            body.removeAll(keepingCapacity: true)
            if !headers.isEmpty { headers = [] }
        }
        completion = nil
        requestBody = nil
        failure = nil
        id = 0
        slot = -1
        headersSent = 0
        bodyOffset = 0
        status = 0
    }

    /// The outcome, once finished.
    var result: Result<H2Response, H2Error> {
        if let failure { return .failure(failure) }
        return .success(H2Response(status: status, headers: headers, body: body))
    }

    /// Copies up to `capacity` bytes of the request body; returns (count, isLast).
    func readBody(into buffer: UnsafeMutableRawPointer, capacity: Int) -> (Int, Bool) {
        guard let requestBody else { return (0, true) }
        let count = min(capacity, requestBody.count - bodyOffset)
        if count > 0 {
            requestBody.withUnsafeBytes { src in
                if let from = src.baseAddress { buffer.copyMemory(from: from + bodyOffset, byteCount: count) }
            }
        }
        bodyOffset += count
        return (count, bodyOffset >= requestBody.count)
    }
}

extension H2Connection: NGHTTP2SessionHandler {
    func sessionClosedStream(_ state: H2StreamState, errorCode: UInt32) {
        // Into `finished` before leaving `slots`: the caller holds `state` unretained.
        guard isOpen(state) else { return }
        finished.append(state)
        _ = close(state)
        if errorCode != NGHTTP2_NO_ERROR.rawValue {
            state.failure = H2Error.reset(errorCode)
        } else if state.status == 0 {
            state.failure = H2Error(.streamReset, detail: "stream closed without a response")
        }
    }

    func sessionReceivedGoaway(lastStream: Int32, errorCode: UInt32) {
        let name = nghttp2_http2_strerror(errorCode).map { String(cString: $0) } ?? String(errorCode)
        goawayDetail = "GOAWAY from server: \(name), last stream \(lastStream)"
    }
}
