import GlimpseJSON

/// Syntax errors of request bodies come from the package's one JSON lexer.
public typealias JSONParseError = GlimpseJSON.JSONParseError

extension JSONValue {
    /// Parses UTF-8 JSON text (strict RFC 8259, nesting limited to `maxDepth`).
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64) throws -> JSONValue {
        try JSONReader.parse(bytes, maxDepth: maxDepth, builder: JSONValueBuilder())
    }
}

/// Builds `JSONValue`s: integers that fit an `Int` stay integers (so ids round-trip exactly), and
/// a repeated object key keeps its last value.
struct JSONValueBuilder: JSONTreeBuilder {
    func null() -> JSONValue { .null }
    func bool(_ value: Bool) -> JSONValue { .bool(value) }
    func number(_ text: String, isInteger: Bool) -> JSONValue? {
        if isInteger, let i = Int(text) { return .int(i) }
        return Double(text).map { .double($0) }
    }
    func string(_ value: String) -> JSONValue { .string(value) }
    func array(_ items: [JSONValue]) -> JSONValue { .array(items) }
    func object(_ members: [(key: String, value: JSONValue)]) -> JSONValue {
        var object: [String: JSONValue] = [:]
        object.reserveCapacity(members.count)
        for member in members { object[member.key] = member.value }
        return .object(object)
    }
}
