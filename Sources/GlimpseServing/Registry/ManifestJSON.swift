import Foundation

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

    public static func parse(_ data: Data) throws -> ManifestJSON {
        var reader = Reader(bytes: [UInt8](data))
        reader.skipSpace()
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.index == reader.bytes.count else { throw reader.error("unexpected data after the JSON value") }
        return value
    }

    struct Reader {
        let bytes: [UInt8]
        var index = 0

        func error(_ what: String) -> MetadataError { MetadataError("JSON: \(what) at byte \(index)") }

        var byte: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while let b = byte, b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { index += 1 }
        }

        mutating func expect(_ c: UInt8) throws {
            guard byte == c else { throw error("expected '\(Character(Unicode.Scalar(c)))'") }
            index += 1
        }

        mutating func value(depth: Int) throws -> ManifestJSON {
            guard depth < 64 else { throw error("nesting too deep") }
            switch byte {
            case UInt8(ascii: "{"):
                index += 1
                var members: [(key: String, value: ManifestJSON)] = []
                skipSpace()
                if byte == UInt8(ascii: "}") { index += 1; return .object(members) }
                while true {
                    skipSpace()
                    let key = try string()
                    skipSpace()
                    try expect(UInt8(ascii: ":"))
                    skipSpace()
                    members.append((key, try value(depth: depth + 1)))
                    skipSpace()
                    if byte == UInt8(ascii: ",") { index += 1; continue }
                    try expect(UInt8(ascii: "}"))
                    return .object(members)
                }
            case UInt8(ascii: "["):
                index += 1
                var items: [ManifestJSON] = []
                skipSpace()
                if byte == UInt8(ascii: "]") { index += 1; return .array(items) }
                while true {
                    skipSpace()
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    if byte == UInt8(ascii: ",") { index += 1; continue }
                    try expect(UInt8(ascii: "]"))
                    return .array(items)
                }
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case .some(let b) where b == UInt8(ascii: "-") || (b >= 0x30 && b <= 0x39):
                let start = index
                while let c = byte, (c >= 0x30 && c <= 0x39) || c == UInt8(ascii: "-") || c == UInt8(ascii: "+")
                        || c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") { index += 1 }
                let text = String(decoding: bytes[start..<index], as: UTF8.self)
                guard Double(text) != nil else { throw error("bad number \(text)") }
                return .number(text)
            default:
                throw error("unexpected character")
            }
        }

        mutating func literal(_ word: String) throws {
            for c in word.utf8 { try expect(c) }
        }

        mutating func string() throws -> String {
            try expect(UInt8(ascii: "\""))
            var units: [UInt16] = []
            var raw: [UInt8] = []
            func flushRaw() {
                if !raw.isEmpty { units.append(contentsOf: String(decoding: raw, as: UTF8.self).utf16); raw.removeAll() }
            }
            while true {
                guard let b = byte else { throw error("unterminated string") }
                index += 1
                switch b {
                case UInt8(ascii: "\""):
                    flushRaw()
                    return String(decoding: units, as: UTF16.self)
                case UInt8(ascii: "\\"):
                    flushRaw()
                    guard let e = byte else { throw error("unterminated escape") }
                    index += 1
                    switch e {
                    case UInt8(ascii: "\""): units.append(0x22)
                    case UInt8(ascii: "\\"): units.append(0x5C)
                    case UInt8(ascii: "/"): units.append(0x2F)
                    case UInt8(ascii: "b"): units.append(0x08)
                    case UInt8(ascii: "f"): units.append(0x0C)
                    case UInt8(ascii: "n"): units.append(0x0A)
                    case UInt8(ascii: "r"): units.append(0x0D)
                    case UInt8(ascii: "t"): units.append(0x09)
                    case UInt8(ascii: "u"):
                        guard index + 4 <= bytes.count, let u = UInt16(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
                            throw error("bad \\u escape")
                        }
                        index += 4
                        units.append(u)
                    default: throw error("bad escape")
                    }
                case 0..<0x20:
                    throw error("control character in a string")
                default:
                    raw.append(b)
                }
            }
        }
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
