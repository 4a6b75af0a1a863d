import Crypto
import Foundation

/// Encrypted model files (`<name>.onnx.enc`): AES-256-GCM over the whole ONNX file, decrypted in
/// memory only. Layout (README "Encrypted model files"):
///
///     offset  size  field
///     0       8     magic "GLMPENC1"
///     8       1     format version (1)
///     9       1     key id length n (1...64)
///     10      n     key id (UTF-8), names the key in the keyring
///     10+n    12    nonce (random per file)
///     22+n    ...   ciphertext (as long as the ONNX file)
///     end-16  16    GCM tag
///
/// The authenticated data is the header (bytes 0 ..< 22+n), a zero byte, and the model file's name
/// without `.enc` (e.g. `digits-small.onnx`), so a changed header, a renamed or substituted file and a
/// truncated one all fail authentication.
public enum EncryptedModelFile {
    public static let magic: [UInt8] = Array("GLMPENC1".utf8)
    public static let version: UInt8 = 1
    public static let fileExtension = ".enc"
    static let nonceBytes = 12
    static let tagBytes = 16

    /// Whether `path` names an encrypted model file (by its extension).
    public static func isEncrypted(_ path: String) -> Bool { path.hasSuffix(".onnx" + fileExtension) }

    /// The name bound into the authenticated data: the file's base name without `.enc`.
    public static func boundName(forPath path: String) -> String {
        let base = (path as NSString).lastPathComponent
        return base.hasSuffix(fileExtension) ? String(base.dropLast(fileExtension.count)) : base
    }

    /// The parsed header of an encrypted file.
    public struct Header: Sendable, Equatable {
        public var keyID: String
        public var nonce: [UInt8]
        /// Bytes of the header (magic to nonce).
        public var length: Int
    }

    /// Reads the header; throws `EncryptedModelError` when the bytes are not an encrypted model.
    public static func header(_ bytes: [UInt8]) throws -> Header {
        guard bytes.count >= magic.count + 2 else { throw EncryptedModelError.truncated }
        guard Array(bytes[0..<magic.count]) == magic else { throw EncryptedModelError.notEncrypted }
        guard bytes[8] == version else { throw EncryptedModelError.unsupportedVersion(bytes[8]) }
        let idLength = Int(bytes[9])
        guard (1...64).contains(idLength) else { throw EncryptedModelError.badHeader("key id length \(idLength)") }
        let length = 10 + idLength + nonceBytes
        guard bytes.count >= length + tagBytes else { throw EncryptedModelError.truncated }
        guard let keyID = String(bytes: bytes[10..<(10 + idLength)], encoding: .utf8), ModelKeyring.isValidID(keyID) else {
            throw EncryptedModelError.badHeader("key id is not printable")
        }
        return Header(keyID: keyID, nonce: Array(bytes[(10 + idLength)..<length]), length: length)
    }

    static func authenticatedData(header: ArraySlice<UInt8>, name: String) -> [UInt8] {
        Array(header) + [0] + Array(name.utf8)
    }

    /// Encrypts an ONNX file's bytes with the key `keyID` of `keyring`, binding `name` (the file name
    /// the result will have, without `.enc`).
    public static func seal(_ plaintext: [UInt8], name: String, keyID: String, keyring: ModelKeyring) throws -> [UInt8] {
        guard let key = keyring.key(id: keyID) else { throw EncryptedModelError.unknownKey(keyID, known: keyring.ids) }
        let id = Array(keyID.utf8)
        let nonce = AES.GCM.Nonce()
        let header = magic + [version, UInt8(id.count)] + id + nonce.withUnsafeBytes { Array($0) }
        let box = try AES.GCM.seal(plaintext, using: SymmetricKey(data: key), nonce: nonce,
                                   authenticating: authenticatedData(header: header[...], name: name))
        return header + Array(box.ciphertext) + Array(box.tag)
    }

    /// Decrypts in memory; the plaintext never touches the disk. Throws `EncryptedModelError`.
    public static func open(_ bytes: [UInt8], name: String, keyring: ModelKeyring) throws -> [UInt8] {
        let header = try header(bytes)
        guard !keyring.isEmpty else { throw EncryptedModelError.noKeys(header.keyID) }
        guard let key = keyring.key(id: header.keyID) else {
            throw EncryptedModelError.unknownKey(header.keyID, known: keyring.ids)
        }
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: header.nonce),
                                            ciphertext: bytes[header.length..<(bytes.count - tagBytes)],
                                            tag: bytes[(bytes.count - tagBytes)...])
            let plain = try AES.GCM.open(box, using: SymmetricKey(data: key),
                                         authenticating: authenticatedData(header: bytes[0..<header.length], name: name))
            return [UInt8](plain)
        } catch {
            throw EncryptedModelError.authenticationFailed(header.keyID)
        }
    }

    /// Reads and decrypts the file at `path`, with errors naming the file.
    public static func open(path: String, keyring: ModelKeyring) throws -> [UInt8] {
        let file = (path as NSString).lastPathComponent
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ServingError.modelUnavailable("cannot read model file \(file)")
        }
        do {
            return try open([UInt8](data), name: boundName(forPath: path), keyring: keyring)
        } catch let error as EncryptedModelError {
            throw ServingError.modelUnavailable("cannot decrypt model file \(file): \(error)")
        }
    }
}

/// Why an encrypted model file does not open.
public enum EncryptedModelError: Error, CustomStringConvertible, Sendable, Equatable {
    case notEncrypted
    case unsupportedVersion(UInt8)
    case badHeader(String)
    case truncated
    case noKeys(String)
    case unknownKey(String, known: [String])
    case authenticationFailed(String)

    public var description: String {
        switch self {
        case .notEncrypted: return "not an encrypted model file (no GLMPENC1 magic)"
        case .unsupportedVersion(let v): return "unsupported encrypted-model format version \(v)"
        case .badHeader(let why): return "damaged header (\(why))"
        case .truncated: return "file is truncated (shorter than its header and tag)"
        case .noKeys(let id):
            return "the file is encrypted with key id \"\(id)\" but no model key was given (--model-key-file or GLIMPSE_MODEL_KEY_FILE)"
        case .unknownKey(let id, let known):
            return "no key with id \"\(id)\" among the model keys given (ids: \(known.joined(separator: ", ")))"
        case .authenticationFailed(let id):
            return "authentication failed with key id \"\(id)\": wrong key, or the file was altered, truncated or renamed"
        }
    }
}
