import GlimpseEngine

/// Protocol-buffer wire types (the low 3 bits of a field key).
package enum WireType: UInt64 {
    case varint = 0
    case fixed64 = 1
    case lengthDelimited = 2
    case fixed32 = 5
}

/// A bounds-checked cursor over protobuf wire-format bytes.
///
/// Every read checks the remaining length and throws `EngineError` on truncated or malformed input;
/// nothing here traps on file contents. Package-visible so the quantizer, which rewrites ONNX files,
/// reads them with the same checks.
package struct ProtoReader {
    package let bytes: [UInt8]
    package private(set) var position: Int
    package let end: Int
    /// What is being read, for error messages (e.g. "GraphProto").
    package let context: String

    package init(bytes: [UInt8], context: String) {
        self.bytes = bytes
        self.position = 0
        self.end = bytes.count
        self.context = context
    }

    /// A reader over `range` of `bytes` (a nested message located earlier).
    package init(bytes: [UInt8], range: Range<Int>, context: String) {
        self.init(bytes: bytes, position: max(0, range.lowerBound), end: min(bytes.count, range.upperBound), context: context)
    }

    private init(bytes: [UInt8], position: Int, end: Int, context: String) {
        self.bytes = bytes
        self.position = position
        self.end = end
        self.context = context
    }

    package var isAtEnd: Bool { position >= end }

    package func error(_ what: String) -> EngineError {
        EngineError("malformed protobuf in \(context) at byte \(position): \(what)")
    }

    package mutating func readVarint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < end else { throw error("truncated varint") }
            let byte = bytes[position]
            position += 1
            guard shift < 64 else { throw error("varint longer than 10 bytes") }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// Reads a field key; returns nil at the end of the message.
    package mutating func readKey() throws -> (field: Int, wire: WireType)? {
        guard !isAtEnd else { return nil }
        let key = try readVarint()
        guard let wire = WireType(rawValue: key & 7) else {
            throw error("unsupported wire type \(key & 7)")
        }
        let field = key >> 3
        guard field > 0, field < (1 << 29) else { throw error("bad field number \(field)") }
        return (Int(field), wire)
    }

    package mutating func readFixed32() throws -> UInt32 {
        guard end - position >= 4 else { throw error("truncated fixed32") }
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(bytes[position + i]) << (8 * UInt32(i)) }
        position += 4
        return v
    }

    package mutating func readFixed64() throws -> UInt64 {
        guard end - position >= 8 else { throw error("truncated fixed64") }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(bytes[position + i]) << (8 * UInt64(i)) }
        position += 8
        return v
    }

    /// Reads a length prefix and returns the byte range it covers, advancing past it.
    package mutating func readLengthDelimitedRange() throws -> Range<Int> {
        let length = try readVarint()
        guard length <= UInt64(end - position) else {
            throw error("length \(length) runs past the end of the message (\(end - position) bytes left)")
        }
        let start = position
        position += Int(length)
        return start..<position
    }

    /// A reader over a nested message.
    package mutating func readMessage(_ context: String) throws -> ProtoReader {
        let range = try readLengthDelimitedRange()
        return ProtoReader(bytes: bytes, position: range.lowerBound, end: range.upperBound, context: context)
    }

    package mutating func readBytes() throws -> ArraySlice<UInt8> {
        let range = try readLengthDelimitedRange()
        return bytes[range]
    }

    package mutating func readString() throws -> String {
        String(decoding: try readBytes(), as: UTF8.self)
    }

    package mutating func readInt64() throws -> Int64 { Int64(bitPattern: try readVarint()) }

    package mutating func readFloat() throws -> Float { Float(bitPattern: try readFixed32()) }

    package mutating func readDouble() throws -> Double { Double(bitPattern: try readFixed64()) }

    /// Skips a field of the given wire type.
    package mutating func skip(_ wire: WireType) throws {
        switch wire {
        case .varint: _ = try readVarint()
        case .fixed64: _ = try readFixed64()
        case .fixed32: _ = try readFixed32()
        case .lengthDelimited: _ = try readLengthDelimitedRange()
        }
    }

    /// Appends a repeated varint field, packed or not.
    package mutating func appendVarints(_ wire: WireType, to out: inout [Int64]) throws {
        if wire == .lengthDelimited {
            var sub = try readMessage(context)
            while !sub.isAtEnd { out.append(try sub.readInt64()) }
        } else if wire == .varint {
            out.append(try readInt64())
        } else {
            throw error("repeated integer field with wire type \(wire)")
        }
    }

    /// Appends a repeated float field, packed or not.
    package mutating func appendFloats(_ wire: WireType, to out: inout [Float]) throws {
        if wire == .lengthDelimited {
            var sub = try readMessage(context)
            while !sub.isAtEnd { out.append(try sub.readFloat()) }
        } else if wire == .fixed32 {
            out.append(try readFloat())
        } else {
            throw error("repeated float field with wire type \(wire)")
        }
    }

    /// Appends a repeated double field, packed or not.
    package mutating func appendDoubles(_ wire: WireType, to out: inout [Double]) throws {
        if wire == .lengthDelimited {
            var sub = try readMessage(context)
            while !sub.isAtEnd { out.append(try sub.readDouble()) }
        } else if wire == .fixed64 {
            out.append(try readDouble())
        } else {
            throw error("repeated double field with wire type \(wire)")
        }
    }
}
