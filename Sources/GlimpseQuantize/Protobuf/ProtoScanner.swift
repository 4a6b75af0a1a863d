/// One field of a protobuf message, located in the source bytes.
struct ProtoField {
    var number: Int
    /// Wire type: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32.
    var wire: Int
    /// The whole field, key included: what to copy to re-emit it unchanged.
    var span: Range<Int>
    /// The payload (for length-delimited fields, without the length prefix).
    var payload: Range<Int>
    /// The decoded value of a varint field.
    var value: UInt64
}

/// Splits protobuf wire-format bytes into fields, with bounds checks that throw (never trap) on
/// truncated or malformed input. Messages are scanned lazily: a nested message is just another
/// byte range to scan.
struct ProtoScanner {
    let bytes: [UInt8]
    /// What is being read, for error messages ("ModelProto", "GraphProto", ...).
    let context: String

    func fields(in range: Range<Int>, _ what: String) throws -> [ProtoField] {
        var out: [ProtoField] = []
        var p = range.lowerBound
        let end = range.upperBound
        func fail(_ why: String) -> QuantizationError {
            .init(.malformedModel, "\(context): malformed protobuf in \(what) at byte \(p): \(why)")
        }
        func readVarint() throws -> UInt64 {
            var result: UInt64 = 0, shift: UInt64 = 0
            while true {
                guard p < end else { throw fail("truncated varint") }
                guard shift < 64 else { throw fail("varint longer than 10 bytes") }
                let b = bytes[p]
                p += 1
                result |= UInt64(b & 0x7F) << shift
                if b < 0x80 { return result }
                shift += 7
            }
        }
        while p < end {
            let start = p
            let key = try readVarint()
            let number = key >> 3, wire = Int(key & 7)
            guard number > 0, number < (1 << 29) else { throw fail("bad field number \(number)") }
            var value: UInt64 = 0
            let payload: Range<Int>
            switch wire {
            case 0:
                let s = p
                value = try readVarint()
                payload = s..<p
            case 1, 5:
                let n = wire == 1 ? 8 : 4
                guard end - p >= n else { throw fail("truncated fixed\(n * 8)") }
                payload = p..<(p + n)
                p += n
            case 2:
                let length = try readVarint()
                guard length <= UInt64(end - p) else {
                    throw fail("length \(length) runs past the end of the message (\(end - p) bytes left)")
                }
                payload = p..<(p + Int(length))
                p += Int(length)
            default:
                throw fail("unsupported wire type \(wire)")
            }
            out.append(ProtoField(number: Int(number), wire: wire, span: start..<p, payload: payload, value: value))
        }
        return out
    }

    func string(_ f: ProtoField) -> String { String(decoding: bytes[f.payload], as: UTF8.self) }

    /// Values of a repeated integer field, packed (one length-delimited field) or not.
    func appendInts(_ f: ProtoField, to out: inout [Int64], _ what: String) throws {
        if f.wire == 0 {
            out.append(Int64(bitPattern: f.value))
        } else if f.wire == 2 {
            for v in try fields(packedVarints: f.payload, what) { out.append(Int64(bitPattern: v)) }
        } else {
            throw QuantizationError(.malformedModel, "\(context): \(what) has wire type \(f.wire)")
        }
    }

    private func fields(packedVarints range: Range<Int>, _ what: String) throws -> [UInt64] {
        var out: [UInt64] = []
        var p = range.lowerBound
        while p < range.upperBound {
            var result: UInt64 = 0, shift: UInt64 = 0
            while true {
                guard p < range.upperBound, shift < 64 else {
                    throw QuantizationError(.malformedModel, "\(context): malformed packed varints in \(what)")
                }
                let b = bytes[p]
                p += 1
                result |= UInt64(b & 0x7F) << shift
                if b < 0x80 { break }
                shift += 7
            }
            out.append(result)
        }
        return out
    }
}
