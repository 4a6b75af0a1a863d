import GlimpseONNX

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

/// Splits protobuf wire-format bytes into located fields, so a rewrite can copy untouched fields
/// byte for byte. The reading itself is GlimpseONNX's `ProtoReader` (the importer's bounds checks);
/// its errors become `malformed_model` errors naming the model.
struct ProtoScanner {
    let bytes: [UInt8]
    /// What is being read, for error messages (the model's name).
    let context: String

    func fields(in range: Range<Int>, _ what: String) throws -> [ProtoField] {
        var reader = ProtoReader(bytes: bytes, range: range, context: what)
        var out: [ProtoField] = []
        do {
            while true {
                let start = reader.position
                guard let (number, wire) = try reader.readKey() else { break }
                var value: UInt64 = 0
                let payload: Range<Int>
                switch wire {
                case .varint:
                    let s = reader.position
                    value = try reader.readVarint()
                    payload = s..<reader.position
                case .fixed64, .fixed32:
                    let s = reader.position
                    try reader.skip(wire)
                    payload = s..<reader.position
                case .lengthDelimited:
                    payload = try reader.readLengthDelimitedRange()
                }
                out.append(ProtoField(number: number, wire: Int(wire.rawValue), span: start..<reader.position, payload: payload, value: value))
            }
        } catch {
            throw QuantizationError(.malformedModel, "\(context): \(error)")
        }
        return out
    }

    func string(_ f: ProtoField) -> String { String(decoding: bytes[f.payload], as: UTF8.self) }

    /// Values of a repeated integer field, packed (one length-delimited field) or not.
    func appendInts(_ f: ProtoField, to out: inout [Int64], _ what: String) throws {
        switch WireType(rawValue: UInt64(f.wire)) {
        case .varint?:
            out.append(Int64(bitPattern: f.value))
        case .lengthDelimited?:
            var reader = ProtoReader(bytes: bytes, range: f.payload, context: what)
            do {
                while !reader.isAtEnd { out.append(try reader.readInt64()) }
            } catch {
                throw QuantizationError(.malformedModel, "\(context): \(error)")
            }
        default:
            throw QuantizationError(.malformedModel, "\(context): \(what) has wire type \(f.wire)")
        }
    }
}
