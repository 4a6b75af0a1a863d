import Crypto
import Foundation

/// SHA-256 of model files, as catalogs and `models.json` write it (64 lowercase hex digits). The
/// digest itself is swift-crypto's (BoringSSL on Linux); this type only adds the hex forms and
/// reading a file in chunks.
public struct SHA256: Sendable {
    private var hasher = Crypto.SHA256()

    public init() {}

    public mutating func update<D: DataProtocol>(_ data: D) {
        hasher.update(data: data)
    }

    /// The digest as 64 lowercase hex digits.
    public func finalizeHex() -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in hasher.finalize() {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Hex digest of one buffer.
    public static func hex<D: DataProtocol>(_ data: D) -> String {
        var h = SHA256()
        h.update(data)
        return h.finalizeHex()
    }

    /// Hex digest of a file, read in 1 MiB chunks.
    public static func hex(ofFile path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw PullError("cannot read \(path) to check its sha256")
        }
        defer { try? handle.close() }
        var h = SHA256()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { h.update(chunk) }
        return h.finalizeHex()
    }
}
