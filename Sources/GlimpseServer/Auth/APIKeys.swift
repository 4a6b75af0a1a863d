import Foundation

/// API keys from a file, each with a role.
///
/// File format, one key per line: `<key> <role> [name]`, where role is `user` (may call every method
/// except the admin ones) or `admin` (may call everything). Blank lines and lines starting with `#`
/// are ignored. Clients send `Authorization: Bearer <key>`.
public struct APIKeys: Sendable {
    public enum Role: String, Sendable {
        case user
        case admin
    }

    public struct Key: Sendable {
        let secret: [UInt8]
        public let role: Role
        public let name: String
    }

    let keys: [Key]

    public init(keys: [(secret: String, role: Role, name: String)]) {
        self.keys = keys.map { Key(secret: Array($0.secret.utf8), role: $0.role, name: $0.name) }
    }

    /// Reads a key file; errors name the file and line, never the key.
    public init(file: String) throws {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ConfigurationError("cannot read API key file \(file)")
        }
        var keys: [(String, Role, String)] = []
        for (n, raw) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard fields.count >= 2, let role = Role(rawValue: fields[1]) else {
                throw ConfigurationError("\(file):\(n + 1): expected `<key> <user|admin> [name]`")
            }
            guard fields[0].utf8.count >= 16 else {
                throw ConfigurationError("\(file):\(n + 1): keys must be at least 16 characters")
            }
            keys.append((fields[0], role, fields.count > 2 ? fields[2...].joined(separator: " ") : "key-\(n + 1)"))
        }
        guard !keys.isEmpty else { throw ConfigurationError("API key file \(file) holds no keys") }
        self.init(keys: keys.map { (secret: $0.0, role: $0.1, name: $0.2) })
    }

    /// The key an `Authorization` header value names, if any. Compares every key in constant time.
    public func authenticate(authorization: String?) -> Key? {
        guard let authorization else { return nil }
        let prefix = "bearer "
        guard authorization.count > prefix.count, authorization.lowercased().hasPrefix(prefix) else { return nil }
        let presented = Array(authorization.utf8.dropFirst(prefix.utf8.count))
        var found: Key?
        for key in keys where Self.constantTimeEqual(key.secret, presented) {
            found = key
        }
        return found
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var diff = UInt8(truncatingIfNeeded: a.count ^ b.count)
        for i in 0..<max(a.count, b.count) {
            diff |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
        }
        return diff == 0
    }
}
