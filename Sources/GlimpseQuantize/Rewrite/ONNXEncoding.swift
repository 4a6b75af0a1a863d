/// Encoders for the ONNX messages the quantizer adds: initializers (TensorProto) and nodes
/// (NodeProto with integer attributes).
enum ONNXEncoding {
    /// TensorProto.DataType values used here.
    enum DataType: Int64 {
        case float = 1, uint8 = 2, int8 = 3, int32 = 6, float16 = 10
    }

    /// TensorProto: dims = 1 (unpacked, as proto2 writes it), data_type = 2, name = 8, raw_data = 9
    /// (little-endian).
    static func tensor(name: String, dims: [Int], type: DataType, raw: [UInt8]) -> ProtoWriter {
        var w = ProtoWriter()
        for d in dims { w.int(1, Int64(d)) }
        w.int(2, type.rawValue)
        w.string(8, name)
        w.bytes(9, raw)
        return w
    }

    static func floatTensor(name: String, dims: [Int], values: [Float]) -> ProtoWriter {
        var raw: [UInt8] = []
        raw.reserveCapacity(values.count * 4)
        for v in values {
            let b = v.bitPattern.littleEndian
            for i in 0..<4 { raw.append(UInt8(truncatingIfNeeded: b >> (8 * UInt32(i)))) }
        }
        return tensor(name: name, dims: dims, type: .float, raw: raw)
    }

    /// NodeProto: input = 1, output = 2, name = 3, op_type = 4, attribute = 5 (AttributeProto
    /// name = 1, i = 3, type = 20 with INT = 2).
    static func node(_ opType: String, inputs: [String], outputs: [String], name: String,
                     ints: [(String, Int64)] = []) -> ProtoWriter {
        var w = ProtoWriter()
        for i in inputs { w.string(1, i) }
        for o in outputs { w.string(2, o) }
        w.string(3, name)
        w.string(4, opType)
        for (attrName, value) in ints {
            var a = ProtoWriter()
            a.string(1, attrName)
            a.int(3, value)
            a.int(20, 2)
            w.message(5, a)
        }
        return w
    }

    /// StringStringEntryProto (ModelProto.metadata_props = 14): key = 1, value = 2.
    static func metadataEntry(key: String, value: String) -> ProtoWriter {
        var w = ProtoWriter()
        w.string(1, key)
        w.string(2, value)
        return w
    }
}
