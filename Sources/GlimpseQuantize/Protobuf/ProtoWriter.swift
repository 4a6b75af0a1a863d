/// A minimal protocol-buffer encoder: just the field kinds ONNX messages use.
///
/// Fields are written in the order they are called. Nested messages are built in their own writer
/// and appended with `message(_:_:)`, which writes the length prefix.
struct ProtoWriter {
    private(set) var bytes: [UInt8] = []

    init() {}

    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    /// Field key: field number and wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32).
    mutating func key(_ field: Int, _ wire: UInt64) { varint(UInt64(field) << 3 | wire) }

    /// An int32/int64/enum field (negative values take ten bytes, as protobuf specifies).
    mutating func int(_ field: Int, _ value: Int64) {
        key(field, 0)
        varint(UInt64(bitPattern: value))
    }

    mutating func float(_ field: Int, _ value: Float) {
        key(field, 5)
        let b = value.bitPattern.littleEndian
        for i in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: b >> (8 * UInt32(i)))) }
    }

    mutating func bytes<C: Collection>(_ field: Int, _ payload: C) where C.Element == UInt8 {
        key(field, 2)
        varint(UInt64(payload.count))
        bytes.append(contentsOf: payload)
    }

    mutating func string(_ field: Int, _ value: String) { bytes(field, Array(value.utf8)) }

    mutating func message(_ field: Int, _ sub: ProtoWriter) { bytes(field, sub.bytes) }

    /// Bytes copied as they are (a field re-emitted from the source file, key included).
    mutating func raw<C: Collection>(_ encoded: C) where C.Element == UInt8 { bytes.append(contentsOf: encoded) }
}
