import Crypto
import Foundation

/// The AES-256 keys of encrypted model files, by key id (several for key rotation).
///
/// Key file format (README "Encrypted model files"): UTF-8 text, one key per line as `ID KEY` or
/// just `KEY`, where KEY is the 32-byte key as 64 hex digits or as base64 (44 characters) and ID is
/// 1–64 characters of `A-Z a-z 0-9 . _ -`; blank lines and lines starting with `#` are skipped. A key
/// without an id gets its fingerprint as id: the first 16 hex digits of the key's SHA-256. A file of
/// exactly 32 bytes that is not such text is taken as one raw key, id its fingerprint.
public struct ModelKeyring: Sendable, Equatable {
    /// Keys in the order given; the first is the one `encrypt` uses unless told otherwise.
    public private(set) var entries: [(id: String, key: [UInt8])] = []

    public init() {}

    public var isEmpty: Bool { entries.isEmpty }
    public var ids: [String] { entries.map(\.id) }

    public func key(id: String) -> [UInt8]? { entries.first { $0.id == id }?.key }

    /// Adds a key; a second key under an id already present is an error.
    public mutating func add(id: String, key: [UInt8]) throws {
        guard key.count == 32 else { throw KeyFileError("key \(id) has \(key.count) bytes; AES-256 needs 32") }
        guard Self.isValidID(id) else { throw KeyFileError("key id \"\(id)\" must be 1-64 characters of A-Z a-z 0-9 . _ -") }
        if let existing = self.key(id: id) {
            if existing == key { return }
            throw KeyFileError("two different keys with id \(id)")
        }
        entries.append((id, key))
    }

    /// Adds the keys of a key file.
    public mutating func addFile(_ path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else { throw KeyFileError("cannot read key file \(path)") }
        do {
            for (id, key) in try Self.parse([UInt8](data)) { try add(id: id, key: key) }
        } catch let error as KeyFileError {
            throw KeyFileError("key file \(path): \(error.description)")
        }
    }

    /// The keys of the files named, in order.
    public static func load(files: [String]) throws -> ModelKeyring {
        var keyring = ModelKeyring()
        for file in files { try keyring.addFile(file) }
        return keyring
    }

    public static func == (a: ModelKeyring, b: ModelKeyring) -> Bool {
        a.entries.count == b.entries.count && zip(a.entries, b.entries).allSatisfy { $0.id == $1.id && $0.key == $1.key }
    }

    static func isValidID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count) && id.utf8.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 46 || c == 95 || c == 45
        }
    }

    /// The default id of a key: the first 16 hex digits of its SHA-256.
    public static func fingerprint(_ key: [UInt8]) -> String {
        SHA256.hash(data: key).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// The key lines of a key file's bytes.
    static func parse(_ bytes: [UInt8]) throws -> [(String, [UInt8])] {
        if let text = String(bytes: bytes, encoding: .utf8), let keys = try? parseText(text), !keys.isEmpty {
            return keys
        }
        if bytes.count == 32 { return [(fingerprint(bytes), bytes)] }
        if let text = String(bytes: bytes, encoding: .utf8) { _ = try parseText(text) }
        throw KeyFileError("no key found (expected lines of `[ID] KEY` with a hex or base64 32-byte key, or 32 raw bytes)")
    }

    static func parseText(_ text: String) throws -> [(String, [UInt8])] {
        var out: [(String, [UInt8])] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard fields.count <= 2, let keyText = fields.last, let key = decodeKey(keyText) else {
                throw KeyFileError("line \(number + 1): expected `[ID] KEY` with a 32-byte key in hex or base64")
            }
            out.append((fields.count == 2 ? fields[0] : fingerprint(key), key))
        }
        return out
    }

    static func decodeKey(_ text: String) -> [UInt8]? {
        if text.utf8.count == 64, let hex = decodeHex(text) { return hex }
        if let data = Data(base64Encoded: text), data.count == 32 { return [UInt8](data) }
        return nil
    }

    static func decodeHex(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var high: UInt8?
        for c in text.utf8 {
            let v: UInt8
            switch c {
            case 48...57: v = c - 48
            case 97...102: v = c - 87
            case 65...70: v = c - 55
            default: return nil
            }
            if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
        }
        return high == nil ? out : nil
    }

    /// A new random key as a key file line (`ID BASE64`); the id defaults to the key's fingerprint.
    public static func generateKeyLine(id: String? = nil) throws -> (id: String, line: String) {
        let key = SymmetricKey(size: .bits256).withUnsafeBytes { [UInt8]($0) }
        let keyID = id ?? fingerprint(key)
        guard isValidID(keyID) else { throw KeyFileError("key id \"\(keyID)\" must be 1-64 characters of A-Z a-z 0-9 . _ -") }
        return (keyID, "\(keyID) \(Data(key).base64EncodedString())\n")
    }
}

public struct KeyFileError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
