import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Downloads one URL into a `.part` file, resuming it with a `Range` request when it already holds
/// bytes. URLSession (libcurl underneath on Linux) does TLS and follows redirects; this class checks
/// statuses, keeps the `Range` header across redirects, streams the body to the file, and bounds
/// the body by the expected size so a misbehaving server cannot fill the disk.
public final class HTTPDownloader: @unchecked Sendable {
    public struct Progress: Sendable {
        /// Bytes in the `.part` file so far (including a resumed prefix).
        public var bytes: Int64
        /// The full size, when the server or the catalog says it.
        public var total: Int64?
        /// Bytes that were already there when this request began.
        public var resumedFrom: Int64
    }

    public struct Outcome: Sendable {
        /// The status of the final response: 200, or 206 when the download resumed.
        public var status: Int
        public var resumedFrom: Int64
        public var bytes: Int64
    }

    /// Seconds without any data before a request fails.
    public var idleTimeout: TimeInterval
    /// Most redirects followed for one request.
    public var maxRedirects: Int

    public init(idleTimeout: TimeInterval = 30, maxRedirects: Int = 10) {
        self.idleTimeout = idleTimeout
        self.maxRedirects = maxRedirects
    }

    /// Bytes in the file at `path` (following links; 0 when there is none).
    static func fileSize(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Fetches `url` into `partPath`. When the file exists with N bytes, asks for `bytes=N-` and appends
    /// if the server answers 206; a 200 answer restarts from zero. `expectedSize` caps the body.
    public func download(_ url: URL, to partPath: String, expectedSize: Int64? = nil,
                         progress: @escaping @Sendable (Progress) -> Void = { _ in }) throws -> Outcome {
        var existing = Self.fileSize(partPath)
        if let expectedSize, existing > expectedSize {
            try? FileManager.default.removeItem(atPath: partPath)
            existing = 0
        }
        if !FileManager.default.fileExists(atPath: partPath) {
            guard FileManager.default.createFile(atPath: partPath, contents: nil) else {
                throw PullError("cannot create \(partPath)")
            }
        }
        guard let handle = FileHandle(forUpdatingAtPath: partPath) else { throw PullError("cannot open \(partPath) for writing") }
        defer { try? handle.close() }

        if let expectedSize, existing == expectedSize, existing > 0 {
            return Outcome(status: 206, resumedFrom: existing, bytes: existing)
        }
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: idleTimeout)
        request.setValue("glimpse-models-pull", forHTTPHeaderField: "User-Agent")
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        if existing > 0 { request.setValue("bytes=\(existing)-", forHTTPHeaderField: "Range") }

        let task = DownloadTask(handle: handle, existing: existing, expectedSize: expectedSize, url: url,
                                maxRedirects: maxRedirects, progress: progress)
        let config = URLSessionConfiguration.ephemeral
        config.timeoutIntervalForRequest = idleTimeout
        config.timeoutIntervalForResource = 6 * 3600
        config.requestCachePolicy = .reloadIgnoringLocalCacheData
        config.urlCache = nil
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let session = URLSession(configuration: config, delegate: task, delegateQueue: queue)
        defer { session.finishTasksAndInvalidate() }
        session.dataTask(with: request).resume()
        task.done.wait()
        if task.status == 416 && existing > 0 {
            // The server will not serve the range (the file changed, or the part is bogus): start over.
            try handle.truncate(atOffset: 0)
            try? handle.close()
            return try download(url, to: partPath, expectedSize: expectedSize, progress: progress)
        }
        if let error = task.failure {
            // A write that failed (a full disk) removes the partial file: keeping it would hold the space
            // the next attempt needs. A network failure keeps it for a resume, unless it is empty.
            if task.writeFailed {
                try? FileManager.default.removeItem(atPath: partPath)
                throw PullError("\(error.description); the partial download \(partPath) was removed")
            }
            if Self.fileSize(partPath) == 0 {
                try? FileManager.default.removeItem(atPath: partPath)
            }
            throw error
        }
        return Outcome(status: task.status, resumedFrom: task.resumedFrom, bytes: task.written)
    }
}

/// The delegate of one request; every callback runs on the session's serial queue.
private final class DownloadTask: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let handle: FileHandle
    let existing: Int64
    let expectedSize: Int64?
    let url: URL
    let maxRedirects: Int
    let progress: @Sendable (HTTPDownloader.Progress) -> Void
    let done = DispatchSemaphore(value: 0)

    var failure: PullError?
    /// Whether the failure was writing the file (not the network).
    var writeFailed = false
    var status = 0
    var resumedFrom: Int64 = 0
    var written: Int64 = 0
    var total: Int64?
    var redirects = 0
    var finished = false

    init(handle: FileHandle, existing: Int64, expectedSize: Int64?, url: URL, maxRedirects: Int,
         progress: @escaping @Sendable (HTTPDownloader.Progress) -> Void) {
        self.handle = handle
        self.existing = existing
        self.expectedSize = expectedSize
        self.url = url
        self.maxRedirects = maxRedirects
        self.progress = progress
        self.total = expectedSize
    }

    /// Writes all of `data` at the file's offset; the errno of a failed write, or nil.
    static func writeAll(_ data: Data, to fd: Int32) -> Int32? {
        data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Int32? in
            guard var p = buffer.baseAddress else { return nil }
            var left = buffer.count
            while left > 0 {
                let n = write(fd, p, left)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return n < 0 ? errno : EIO }
                p += n
                left -= n
            }
            return nil
        }
    }

    /// A file error as the system names it ("No space left on device"), with its errno where known.
    static func describe(_ error: Error) -> String {
        let ns = error as NSError
        if ns.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(ns.code))) }
        if let posix = ns.userInfo[NSUnderlyingErrorKey] as? NSError, posix.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(posix.code)))
        }
        return "\(error)"
    }

    func fail(_ message: String) {
        if failure == nil { failure = PullError(message) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        redirects += 1
        guard redirects <= maxRedirects else {
            fail("too many redirects (over \(maxRedirects)) fetching \(url)")
            completionHandler(nil)
            task.cancel()
            return
        }
        var next = request
        if existing > 0 { next.setValue("bytes=\(existing)-", forHTTPHeaderField: "Range") }
        completionHandler(next)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        guard let http = response as? HTTPURLResponse else {
            fail("\(url) did not answer with HTTP")
            return completionHandler(.cancel)
        }
        status = http.statusCode
        let length = (http.value(forHTTPHeaderField: "Content-Length")).flatMap { Int64($0) }
        do {
            switch http.statusCode {
            case 206 where existing > 0:
                let range = http.value(forHTTPHeaderField: "Content-Range") ?? ""
                guard let (start, full) = Self.parseContentRange(range), start == existing else {
                    fail("\(url) answered 206 with Content-Range \"\(range)\", not the bytes=\(existing)- that was asked for")
                    return completionHandler(.cancel)
                }
                if let full { total = full }
                resumedFrom = existing
                written = existing
                try handle.seek(toOffset: UInt64(existing))
                try handle.truncate(atOffset: UInt64(existing))
            case 200:
                resumedFrom = 0
                written = 0
                // A fresh file is empty and at offset 0 already.
                if existing > 0 {
                    try handle.truncate(atOffset: 0)
                    try handle.seek(toOffset: 0)
                }
                if let length { total = length }
            default:
                let reason = HTTPURLResponse.localizedString(forStatusCode: http.statusCode)
                fail("HTTP \(http.statusCode) (\(reason)) from \(http.url?.absoluteString ?? url.absoluteString)")
                return completionHandler(.cancel)
            }
        } catch {
            writeFailed = true
            fail("cannot write the download: \(Self.describe(error))")
            return completionHandler(.cancel)
        }
        if let expectedSize, let total, total != expectedSize {
            fail("\(url) announces \(total) bytes, but the catalog expects \(expectedSize)")
            return completionHandler(.cancel)
        }
        progress(.init(bytes: written, total: total, resumedFrom: resumedFrom))
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard failure == nil else { return }
        if let cap = total ?? expectedSize, written + Int64(data.count) > cap {
            fail("\(url) sent more than the \(cap) bytes expected")
            dataTask.cancel()
            return
        }
        if let failed = Self.writeAll(data, to: handle.fileDescriptor) {
            writeFailed = true
            fail("cannot write the download: \(String(cString: strerror(failed)))")
            dataTask.cancel()
            return
        }
        written += Int64(data.count)
        progress(.init(bytes: written, total: total, resumedFrom: resumedFrom))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        guard !finished else { return }
        finished = true
        if let error, failure == nil {
            let got = written > 0 ? " after \(written) bytes (\(written - resumedFrom) this time); run pull again to resume" : ""
            fail("download of \(url) failed\(got): \(error.localizedDescription)")
        } else if failure == nil, let total, written != total {
            fail("download of \(url) ended at \(written) of \(total) bytes; run pull again to resume")
        }
        try? handle.synchronize()
        done.signal()
    }

    /// `bytes START-END/TOTAL` (TOTAL may be `*`) → (START, TOTAL).
    static func parseContentRange(_ value: String) -> (Int64, Int64?)? {
        let v = value.trimmingCharacters(in: .whitespaces)
        guard v.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = v.dropFirst(6)
        let parts = spec.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let range = parts[0].split(separator: "-", maxSplits: 1)
        guard range.count == 2, let start = Int64(range[0]), Int64(range[1]) != nil else { return nil }
        return (start, Int64(parts[1]))
    }
}

/// Why a pull failed, in words for the user.
public struct PullError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
