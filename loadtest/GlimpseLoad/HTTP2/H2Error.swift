import CNGHTTP2

/// An error from the HTTP/2 client: a stable `kind`, plus the nghttp2 library code or the HTTP/2
/// error code (RST_STREAM / GOAWAY) when there is one. New kinds can be added without breaking callers.
public struct H2Error: Error, Hashable, CustomStringConvertible, Sendable {
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case connect, library, streamReset, connectionClosed, timeout, invalidRequest, goaway, tls
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The TCP connection could not be established (DNS, refused, timed out).
        public static let connect = Kind(.connect)
        /// libnghttp2 returned an error code (see `H2Error.libraryCode`).
        public static let library = Kind(.library)
        /// The peer reset the stream (see `H2Error.http2Code`).
        public static let streamReset = Kind(.streamReset)
        /// The connection closed (EOF, socket error, or client shutdown) before the response completed.
        public static let connectionClosed = Kind(.connectionClosed)
        /// The response did not complete within the request timeout.
        public static let timeout = Kind(.timeout)
        /// The request was rejected before sending (bad header, client backlog full).
        public static let invalidRequest = Kind(.invalidRequest)
        /// The server sent GOAWAY and this stream was not processed.
        public static let goaway = Kind(.goaway)
        /// TLS failed: the handshake (certificate verification, no "h2" in ALPN, an alert from the server)
        /// or a TLS error on an established connection.
        public static let tls = Kind(.tls)

        public var description: String { base.rawValue }
    }

    public let kind: Kind
    /// The libnghttp2 error code (negative, `NGHTTP2_ERR_*`), when the error came from the library.
    public let libraryCode: Int32?
    /// The HTTP/2 error code from RST_STREAM or GOAWAY, when the peer sent one.
    public let http2Code: UInt32?
    public let detail: String

    public init(_ kind: Kind, detail: String, libraryCode: Int32? = nil, http2Code: UInt32? = nil) {
        self.kind = kind
        self.detail = detail
        self.libraryCode = libraryCode
        self.http2Code = http2Code
    }

    /// Wraps a negative libnghttp2 return value.
    static func library(_ code: Int32, _ operation: String) -> H2Error {
        let text = nghttp2_strerror(code).map { String(cString: $0) } ?? "unknown"
        return H2Error(.library, detail: "\(operation): \(text) (\(code))", libraryCode: code)
    }

    /// A stream closed with a non-zero HTTP/2 error code.
    static func reset(_ code: UInt32) -> H2Error {
        let text = nghttp2_http2_strerror(code).map { String(cString: $0) } ?? "unknown"
        return H2Error(.streamReset, detail: "stream reset: \(text) (\(code))", http2Code: code)
    }

    /// A short label for error tables, e.g. `stream_reset:REFUSED_STREAM`.
    public var label: String {
        if let code = http2Code, let text = nghttp2_http2_strerror(code) {
            return "\(kind):\(String(cString: text))"
        }
        if let code = libraryCode { return "\(kind):\(code)" }
        return kind.description
    }

    public var description: String { "H2Error(\(kind)): \(detail)" }
}

/// Throws an `H2Error` for a negative nghttp2 return value; returns non-negative values unchanged.
@discardableResult
func nghttp2Check<T: BinaryInteger>(_ value: T, _ operation: String) throws -> T {
    if value < 0 { throw H2Error.library(Int32(truncatingIfNeeded: value), operation) }
    return value
}
