/// New value names for a graph being rewritten: never one the model already uses, nor one handed
/// out before (`base`, then `base_2`, `base_3`, …).
struct FreshNames {
    private var used = Set<String>()

    init(_ file: ONNXModelFile) {
        for n in file.nodes { used.formUnion(n.inputs); used.formUnion(n.outputs) }
        for t in file.initializers { used.insert(t.name) }
        for i in file.inputs { used.insert(i.name) }
    }

    mutating func make(_ base: String) -> String {
        var candidate = base, k = 1
        while used.contains(candidate) {
            k += 1
            candidate = "\(base)_\(k)"
        }
        used.insert(candidate)
        return candidate
    }
}

extension ONNXEncoding {
    /// A symmetric int8 weight (`q`, per-channel `scales` along `axis`, zero points 0) and the
    /// `DequantizeLinear` node that restores the float tensor `name` from it, under fresh names.
    static func dequantizedInt8Weight(_ name: String, dims: [Int], q: [UInt8], scales: [Float], axis: Int,
                                      names: inout FreshNames) -> (initializers: [ProtoWriter], node: ProtoWriter) {
        let qName = names.make(name + "_quantized"), sName = names.make(name + "_scale"), zName = names.make(name + "_zero_point")
        let initializers = [
            tensor(name: qName, dims: dims, type: .int8, raw: q),
            floatTensor(name: sName, dims: [scales.count], values: scales),
            tensor(name: zName, dims: [scales.count], type: .int8, raw: [UInt8](repeating: 0, count: scales.count)),
        ]
        let node = node("DequantizeLinear", inputs: [qName, sName, zName], outputs: [name],
                        name: names.make(name + "_dequantize"), ints: [("axis", Int64(axis))])
        return (initializers, node)
    }
}
