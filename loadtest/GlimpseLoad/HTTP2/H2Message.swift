/// One HTTP/2 request. `body` is shared copy-on-write, so a corpus of bodies is never copied per request.
public struct H2Request: Sendable {
    public var method: String
    /// `http` (h2c) or `https` (h2 over TLS): the `:scheme` pseudo-header.
    public var scheme: String
    public var path: String
    public var authority: String
    public var headers: [(String, String)]
    public var body: [UInt8]?
    /// The encoded header block, when built once up front (see `prepared()`).
    public var headerBlock: H2HeaderBlock?

    public init(method: String = "GET", path: String, authority: String = "localhost",
                headers: [(String, String)] = [], body: [UInt8]? = nil, scheme: String = "http") {
        self.method = method
        self.scheme = scheme
        self.path = path
        self.authority = authority
        self.headers = headers
        self.body = body
    }

    /// A copy whose header block is encoded now; sending it repeatedly then costs no header work.
    public func prepared() -> H2Request {
        var copy = self
        copy.headerBlock = H2HeaderBlock(headerList)
        return copy
    }

    /// Pseudo-headers first, then the caller's headers (names lower-cased, as HTTP/2 requires).
    var headerList: [(String, String)] {
        var list: [(String, String)] = [(":method", method), (":scheme", scheme), (":authority", authority), (":path", path)]
        list.reserveCapacity(4 + headers.count + 1)
        for (name, value) in headers { list.append((name.lowercased(), value)) }
        if let body, !headers.contains(where: { $0.0.lowercased() == "content-length" }) {
            list.append(("content-length", String(body.count)))
        }
        return list
    }
}

/// A complete HTTP/2 response.
public struct H2Response: Sendable {
    public var status: Int
    /// Response headers in arrival order, names lower-case (pseudo-headers excluded).
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first header with this (lower-case) name.
    public func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }

    public var bodyString: String { String(decoding: body, as: UTF8.self) }
}

/// When a request went through its stages, in `MonotonicClock` nanoseconds.
public struct H2Timing: Sendable {
    /// When the request was handed to the connection.
    public var submitted: UInt64
    /// When its HEADERS frame was serialized for the socket (0 if never sent).
    public var headersSent: UInt64
    /// When the response completed or failed.
    public var completed: UInt64

    public init(submitted: UInt64, headersSent: UInt64, completed: UInt64) {
        self.submitted = submitted
        self.headersSent = headersSent
        self.completed = completed
    }
}

public typealias H2Completion = (Result<H2Response, H2Error>, H2Timing) -> Void
