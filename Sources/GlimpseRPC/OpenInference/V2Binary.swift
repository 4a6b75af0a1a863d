/// The binary data extension of the Open Inference Protocol: tensors travel after the JSON header,
/// each `binary_data_size` bytes, in the order of the tensors that carry that parameter. Numbers are
/// little-endian; a BYTES element is a 4-byte little-endian length followed by its bytes.
struct V2Binary {
    let bytes: [UInt8]
    private(set) var offset: Int

    init(bytes: [UInt8], offset: Int) {
        self.bytes = bytes
        self.offset = offset
    }

    var remaining: Int { bytes.count - offset }

    /// The next `count` bytes of binary data.
    mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count <= remaining else {
            throw RPCError.invalidParams("binary_data_size \(count) is more than the \(remaining) bytes of binary data left in the body")
        }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    /// BYTES elements: each a 4-byte little-endian length, then that many bytes.
    static func splitBytes(_ data: ArraySlice<UInt8>) throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        var i = data.startIndex
        while i < data.endIndex {
            guard data.endIndex - i >= 4 else { throw RPCError.invalidParams("BYTES binary data ends inside an element's 4-byte length") }
            let length = Int(data[i]) | Int(data[i + 1]) << 8 | Int(data[i + 2]) << 16 | Int(data[i + 3]) << 24
            i += 4
            guard data.endIndex - i >= length else {
                throw RPCError.invalidParams("a BYTES element says \(length) bytes but only \(data.endIndex - i) follow")
            }
            out.append(Array(data[i..<(i + length)]))
            i += length
        }
        return out
    }

    /// FP32 binary data as floats.
    static func floats(_ data: ArraySlice<UInt8>) throws -> [Float] {
        guard data.count % 4 == 0 else { throw RPCError.invalidParams("FP32 binary data of \(data.count) bytes is not a whole number of floats") }
        return stride(from: data.startIndex, to: data.endIndex, by: 4).map { i in
            Float(bitPattern: UInt32(data[i]) | UInt32(data[i + 1]) << 8 | UInt32(data[i + 2]) << 16 | UInt32(data[i + 3]) << 24)
        }
    }

    static func appendLength(_ n: Int, to out: inout [UInt8]) {
        let v = UInt32(truncatingIfNeeded: n)
        out += [UInt8(v & 0xff), UInt8((v >> 8) & 0xff), UInt8((v >> 16) & 0xff), UInt8(v >> 24)]
    }

    static func appendFloats(_ values: [Float], to out: inout [UInt8]) {
        out.reserveCapacity(out.count + values.count * 4)
        for f in values {
            let v = f.bitPattern
            out += [UInt8(v & 0xff), UInt8((v >> 8) & 0xff), UInt8((v >> 16) & 0xff), UInt8(v >> 24)]
        }
    }
}

/// Typed access to the members of v2 JSON documents, with 400 errors that name the field.
enum V2Fields {
    static func object(_ value: JSONValue?, field: String) throws -> [String: JSONValue] {
        switch value {
        case nil, .null?: return [:]
        case .object(let o)?: return o
        case let v?: throw RPCError.invalidParams("\(field) must be an object, got \(v.typeName)")
        }
    }

    static func string(_ value: JSONValue?, field: String) throws -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let s)?: return s
        case let v?: throw RPCError.invalidParams("\(field) must be a string, got \(v.typeName)")
        }
    }

    static func bool(_ value: JSONValue?, field: String) throws -> Bool? {
        switch value {
        case nil, .null?: return nil
        case .bool(let b)?: return b
        case let v?: throw RPCError.invalidParams("\(field) must be a boolean, got \(v.typeName)")
        }
    }

    /// Tensor `data`, flat or nested row-major, as its elements in order.
    static func flatten(_ value: JSONValue?) throws -> [JSONValue] {
        guard case .array(let items)? = value else { throw RPCError.invalidParams("inputs[0].data must be an array") }
        var out: [JSONValue] = []
        out.reserveCapacity(items.count)
        func walk(_ a: [JSONValue]) {
            for e in a {
                if case .array(let inner) = e { walk(inner) } else { out.append(e) }
            }
        }
        walk(items)
        return out
    }
}
