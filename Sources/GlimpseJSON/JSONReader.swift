/// What a JSON tree is built of: one builder per value type (the RPC layer's `JSONValue`, the model
/// manifest's order-keeping value), over the one lexer and parser.
public protocol JSONTreeBuilder {
    associatedtype Value
    func null() -> Value
    func bool(_ value: Bool) -> Value
    /// A number, from its exact text; nil when this builder cannot represent it.
    func number(_ text: String, isInteger: Bool) -> Value?
    func string(_ value: String) -> Value
    func array(_ items: [Value]) -> Value
    /// An object, with its members in the order of the text (duplicate keys included).
    func object(_ members: [(key: String, value: Value)]) -> Value
}

/// A strict RFC 8259 parser over `JSONLexer`, with a nesting limit: parses one value, surrounded by
/// nothing but whitespace.
public struct JSONReader<Builder: JSONTreeBuilder> {
    @usableFromInline var lexer: JSONLexer
    @usableFromInline let builder: Builder
    @usableFromInline let maxDepth: Int

    @usableFromInline
    init(lexer: JSONLexer, builder: Builder, maxDepth: Int) {
        self.lexer = lexer
        self.builder = builder
        self.maxDepth = maxDepth
    }

    /// Parses UTF-8 JSON text into `builder`'s values. Inlinable, so each builder gets a specialized
    /// parser.
    @inlinable
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64, builder: Builder) throws -> Builder.Value {
        try bytes.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(lexer: JSONLexer(bytes: buffer), builder: builder, maxDepth: maxDepth)
            reader.lexer.skipWhitespace()
            let value = try reader.value(depth: 0)
            reader.lexer.skipWhitespace()
            guard reader.lexer.isAtEnd else { throw reader.lexer.error("unexpected data after the JSON value") }
            return value
        }
    }

    @inlinable
    mutating func value(depth: Int) throws -> Builder.Value {
        guard let c = lexer.current else {
            throw lexer.error(lexer.index == 0 ? "empty body; expected a JSON value" : "unexpected end of JSON")
        }
        switch c {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return builder.string(try lexer.string())
        case UInt8(ascii: "t"): try lexer.expectLiteral("true"); return builder.bool(true)
        case UInt8(ascii: "f"): try lexer.expectLiteral("false"); return builder.bool(false)
        case UInt8(ascii: "n"): try lexer.expectLiteral("null"); return builder.null()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let (text, isInteger) = try lexer.number()
            guard let number = builder.number(text, isInteger: isInteger) else { throw lexer.error("invalid number") }
            return number
        default: throw lexer.error("unexpected character '\(Character(Unicode.Scalar(c)))'")
        }
    }

    @inlinable
    mutating func object(depth: Int) throws -> Builder.Value {
        guard depth <= maxDepth else { throw lexer.error("JSON nested deeper than \(maxDepth) levels") }
        lexer.index += 1
        var members: [(key: String, value: Builder.Value)] = []
        lexer.skipWhitespace()
        if lexer.current == UInt8(ascii: "}") { lexer.index += 1; return builder.object(members) }
        while true {
            lexer.skipWhitespace()
            guard lexer.current == UInt8(ascii: "\"") else { throw lexer.error("expected a string key in object") }
            let key = try lexer.string()
            lexer.skipWhitespace()
            guard lexer.current == UInt8(ascii: ":") else { throw lexer.error("expected ':' after object key") }
            lexer.index += 1
            lexer.skipWhitespace()
            members.append((key, try value(depth: depth)))
            if try endOfList(UInt8(ascii: "}"), in: "object") { return builder.object(members) }
        }
    }

    @inlinable
    mutating func array(depth: Int) throws -> Builder.Value {
        guard depth <= maxDepth else { throw lexer.error("JSON nested deeper than \(maxDepth) levels") }
        lexer.index += 1
        var items: [Builder.Value] = []
        lexer.skipWhitespace()
        if lexer.current == UInt8(ascii: "]") { lexer.index += 1; return builder.array(items) }
        while true {
            lexer.skipWhitespace()
            items.append(try value(depth: depth))
            if try endOfList(UInt8(ascii: "]"), in: "array") { return builder.array(items) }
        }
    }

    /// After an object member or array element: skips whitespace, then consumes a `,` (false: the
    /// list goes on) or `closer` (true: it ends); anything else is an error naming the list, at its
    /// offset. Part of the reader, not the lexer, and inlinable like the reader, so each builder's
    /// specialized parser keeps this step inline.
    @inlinable
    mutating func endOfList(_ closer: UInt8, in list: StaticString) throws -> Bool {
        lexer.skipWhitespace()
        guard let c = lexer.current else { throw lexer.error("unexpected end of JSON inside an \(list)") }
        if c == UInt8(ascii: ",") { lexer.index += 1; return false }
        if c == closer { lexer.index += 1; return true }
        throw lexer.error("expected ',' or '\(Character(Unicode.Scalar(closer)))' in \(list)")
    }
}
