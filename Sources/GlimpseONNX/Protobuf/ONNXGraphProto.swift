import GlimpseEngine

/// AttributeProto: name = 1, f = 2, i = 3, s = 4, t = 5, g = 6, floats = 7, ints = 8, strings = 9,
/// tensors = 10, graphs = 11, type = 20.
struct ONNXAttribute {
    var name = ""
    var type = 0
    var f: Float?
    var i: Int64?
    var s: String?
    var t: ONNXTensorProto?
    var floats: [Float] = []
    var ints: [Int64] = []
    var strings: [String] = []
    var hasGraph = false

    init(reader: inout ProtoReader) throws {
        while let (field, wire) = try reader.readKey() {
            switch field {
            case 1: name = try reader.readString()
            case 2: f = try reader.readFloat()
            case 3: i = try reader.readInt64()
            case 4: s = try reader.readString()
            case 5:
                var sub = try reader.readMessage("AttributeProto.t")
                t = try ONNXTensorProto(reader: &sub)
            case 6, 11:
                hasGraph = true
                try reader.skip(wire)
            case 7: try reader.appendFloats(wire, to: &floats)
            case 8: try reader.appendVarints(wire, to: &ints)
            case 9: strings.append(try reader.readString())
            case 20: type = Int(try reader.readInt64())
            default: try reader.skip(wire)
            }
        }
    }
}

/// NodeProto: input = 1, output = 2, name = 3, op_type = 4, attribute = 5, domain = 7.
struct ONNXNode {
    var inputs: [String] = []
    var outputs: [String] = []
    var name = ""
    var opType = ""
    var domain = ""
    var attributes: [ONNXAttribute] = []

    init(reader: inout ProtoReader) throws {
        while let (field, wire) = try reader.readKey() {
            switch field {
            case 1: inputs.append(try reader.readString())
            case 2: outputs.append(try reader.readString())
            case 3: name = try reader.readString()
            case 4: opType = try reader.readString()
            case 5:
                var sub = try reader.readMessage("AttributeProto")
                attributes.append(try ONNXAttribute(reader: &sub))
            case 7: domain = try reader.readString()
            default: try reader.skip(wire)
            }
        }
    }
}

/// GraphProto: node = 1, name = 2, initializer = 5, input = 11, output = 12, value_info = 13.
struct ONNXGraph {
    var name = ""
    var nodes: [ONNXNode] = []
    var initializers: [ONNXTensorProto] = []
    var inputs: [ONNXValueInfo] = []
    var outputs: [ONNXValueInfo] = []

    init(reader: inout ProtoReader) throws {
        while let (field, wire) = try reader.readKey() {
            switch field {
            case 1:
                var sub = try reader.readMessage("NodeProto")
                nodes.append(try ONNXNode(reader: &sub))
            case 2: name = try reader.readString()
            case 5:
                var sub = try reader.readMessage("TensorProto")
                initializers.append(try ONNXTensorProto(reader: &sub))
            case 11:
                var sub = try reader.readMessage("ValueInfoProto")
                inputs.append(try ONNXValueInfo(reader: &sub))
            case 12:
                var sub = try reader.readMessage("ValueInfoProto")
                outputs.append(try ONNXValueInfo(reader: &sub))
            default: try reader.skip(wire)
            }
        }
    }
}

/// ModelProto: ir_version = 1, producer_name = 2, graph = 7, opset_import = 8
/// (OperatorSetIdProto: domain = 1, version = 2).
struct ONNXModel {
    var irVersion: Int64 = 0
    var producer = ""
    var opsets: [String: Int64] = [:]
    var graph: ONNXGraph?

    init(bytes: [UInt8], name: String) throws {
        var reader = ProtoReader(bytes: bytes, context: "ModelProto of \(name)")
        while let (field, wire) = try reader.readKey() {
            switch field {
            case 1: irVersion = try reader.readInt64()
            case 2: producer = try reader.readString()
            case 7:
                var sub = try reader.readMessage("GraphProto of \(name)")
                graph = try ONNXGraph(reader: &sub)
            case 8:
                var sub = try reader.readMessage("OperatorSetIdProto")
                var domain = ""
                var version: Int64 = 0
                while let (f, w) = try sub.readKey() {
                    switch f {
                    case 1: domain = try sub.readString()
                    case 2: version = try sub.readInt64()
                    default: try sub.skip(w)
                    }
                }
                opsets[domain == "ai.onnx" ? "" : domain] = version
            default: try reader.skip(wire)
            }
        }
    }
}
