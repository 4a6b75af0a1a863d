import GlimpseEngine

/// TensorProto (onnx.proto): dims = 1, data_type = 2, float_data = 4, int32_data = 5, string_data = 6,
/// int64_data = 7, name = 8, raw_data = 9, double_data = 10, uint64_data = 11, external_data = 13,
/// data_location = 14.
struct ONNXTensorProto {
    var name = ""
    var dims: [Int64] = []
    var dataType: Int = 0
    var rawData: ArraySlice<UInt8>?
    var floatData: [Float] = []
    var int32Data: [Int64] = []
    var int64Data: [Int64] = []
    var uint64Data: [Int64] = []
    var doubleData: [Double] = []
    var isExternal = false

    init(reader: inout ProtoReader) throws {
        while let (field, wire) = try reader.readKey() {
            switch field {
            case 1: try reader.appendVarints(wire, to: &dims)
            case 2: dataType = Int(try reader.readInt64())
            case 4: try reader.appendFloats(wire, to: &floatData)
            case 5: try reader.appendVarints(wire, to: &int32Data)
            case 7: try reader.appendVarints(wire, to: &int64Data)
            case 8: name = try reader.readString()
            case 9: rawData = try reader.readBytes()
            case 10: try reader.appendDoubles(wire, to: &doubleData)
            case 11: try reader.appendVarints(wire, to: &uint64Data)
            case 13:
                isExternal = true
                try reader.skip(wire)
            case 14:
                if try reader.readInt64() == 1 { isExternal = true }
            default: try reader.skip(wire)
            }
        }
    }
}

/// TypeProto.Tensor / TensorShapeProto as far as value infos need them: element type and dims
/// (a dimension is a number, or nil when it is symbolic such as "batch").
struct ONNXValueInfo {
    var name = ""
    var elemType = 0
    var dims: [Int?]? = nil

    init(reader: inout ProtoReader) throws {
        while let (field, wire) = try reader.readKey() {
            switch field {
            case 1: name = try reader.readString()
            case 2:
                var type = try reader.readMessage("TypeProto")
                while let (tf, tw) = try type.readKey() {
                    guard tf == 1 else { try type.skip(tw); continue }  // tensor_type
                    var tensorType = try type.readMessage("TypeProto.Tensor")
                    while let (f, w) = try tensorType.readKey() {
                        switch f {
                        case 1: elemType = Int(try tensorType.readInt64())
                        case 2:
                            var shape = try tensorType.readMessage("TensorShapeProto")
                            var out: [Int?] = []
                            while let (sf, sw) = try shape.readKey() {
                                guard sf == 1 else { try shape.skip(sw); continue }
                                var dim = try shape.readMessage("TensorShapeProto.Dimension")
                                var value: Int? = nil
                                while let (df, dw) = try dim.readKey() {
                                    if df == 1 { value = Int(try dim.readInt64()) } else { try dim.skip(dw) }
                                }
                                out.append(value)
                            }
                            dims = out
                        default: try tensorType.skip(w)
                        }
                    }
                }
            default: try reader.skip(wire)
            }
        }
    }
}
