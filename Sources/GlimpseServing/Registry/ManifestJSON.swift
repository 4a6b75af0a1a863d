import Foundation
import GlimpseJSON

/// A JSON value that keeps what a hand-kept or tool-written file needs to survive an edit: the order
/// of object members and the exact text of every number. `pythonText()` writes it the way Python's
/// `json.dumps(value, indent=2)` does (two-space indent, `": "` and `","`, non-ASCII as `\uXXXX`), the
/// form `tools/train/common.py` gives `models/models.json`, so reading and writing an unchanged manifest
/// gives the same bytes and an edit shows as a small diff.
public enum ManifestJSON: Equatable, Sendable {
    case null
    case bool(Bool)
    /// The number as written in the file (never reformatted).
    case number(String)
    case string(String)
    case array([ManifestJSON])
    case object([(key: String, value: ManifestJSON)])

    public static func == (a: ManifestJSON, b: ManifestJSON) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.number(let x), .number(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    /// A number from a Double, written as Python's `repr` writes most values (shortest round trip).
    public static func number(_ value: Double) -> ManifestJSON {
        if value.isFinite, value == value.rounded(), abs(value) < 1e16 { return .number(String(format: "%.1f", value)) }
        return .number("\(value)")
    }

    public static func number(_ value: Int) -> ManifestJSON { .number(String(value)) }

    /// The member `key` of an object.
    public subscript(key: String) -> ManifestJSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// Sets member `key` of an object: in place when present, else after `after` (when given and
    /// present) or at the end. Does nothing to other values.
    public mutating func set(_ key: String, _ value: ManifestJSON, after: String? = nil) {
        guard case .object(var members) = self else { return }
        if let i = members.firstIndex(where: { $0.key == key }) {
            members[i].value = value
        } else if let after, let i = members.firstIndex(where: { $0.key == after }) {
            members.insert((key, value), at: i + 1)
        } else {
            members.append((key, value))
        }
        self = .object(members)
    }

    // MARK: Reading

    /// Parses with the package's one JSON lexer and parser (strict RFC 8259), keeping member order
    /// and number texts.
    public static func parse(_ data: Data) throws -> ManifestJSON {
        do {
            return try JSONReader.parse([UInt8](data), builder: Builder())
        } catch let e as JSONParseError {
            throw MetadataError("JSON: \(e.message) at byte \(e.offset)")
        }
    }

    struct Builder: JSONTreeBuilder {
        func null() -> ManifestJSON { .null }
        func bool(_ value: Bool) -> ManifestJSON { .bool(value) }
        func number(_ text: String, isInteger: Bool) -> ManifestJSON? { .number(text) }
        func string(_ value: String) -> ManifestJSON { .string(value) }
        func array(_ items: [ManifestJSON]) -> ManifestJSON { .array(items) }
        func object(_ members: [(key: String, value: ManifestJSON)]) -> ManifestJSON { .object(members) }
    }

    // MARK: Writing

    /// The text `json.dumps(value, indent=2)` would give, plus a final newline (as the training scripts
    /// write it) unless told otherwise.
    public func pythonText(finalNewline: Bool = true) -> String {
        var out = ""
        write(into: &out, indent: 0)
        if finalNewline { out += "\n" }
        return out
    }

    private func write(into out: inout String, indent: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let text): out += text
        case .string(let s): Self.writeString(s, into: &out)
        case .array(let items):
            if items.isEmpty { out += "[]"; return }
            out += "[\n"
            for (i, item) in items.enumerated() {
                out += String(repeating: " ", count: indent + 2)
                item.write(into: &out, indent: indent + 2)
                out += i == items.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: " ", count: indent) + "]"
        case .object(let members):
            if members.isEmpty { out += "{}"; return }
            out += "{\n"
            for (i, member) in members.enumerated() {
                out += String(repeating: " ", count: indent + 2)
                Self.writeString(member.key, into: &out)
                out += ": "
                member.value.write(into: &out, indent: indent + 2)
                out += i == members.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: " ", count: indent) + "}"
        }
    }

    /// As Python's `ensure_ascii` encoder: `"` and `\` escaped, the usual short escapes, anything else
    /// outside printable ASCII as `\u` plus four lowercase hex digits per UTF-16 unit.
    private static func writeString(_ s: String, into out: inout String) {
        out += "\""
        for unit in s.utf16 {
            switch unit {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x08: out += "\\b"
            case 0x0C: out += "\\f"
            case 0x20...0x7E: out.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            default:
                let hex = String(unit, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        out += "\""
    }
}
