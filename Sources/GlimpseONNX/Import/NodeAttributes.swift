import GlimpseEngine
import GlimpseTensor

/// Typed access to a node's attributes, with errors naming the node.
struct NodeAttributes {
    let node: ONNXNode
    let model: String
    let opset: Int

    func error(_ what: String) -> EngineError {
        EngineError("\(model): \(node.opType) node '\(node.name)': \(what)")
    }

    func find(_ name: String) -> ONNXAttribute? { node.attributes.first { $0.name == name } }

    func int(_ name: String, _ fallback: Int) throws -> Int {
        guard let a = find(name) else { return fallback }
        guard let i = a.i else { throw error("attribute '\(name)' is not an integer") }
        guard i > Int64(Int32.min), i < Int64(Int32.max) else { throw error("attribute '\(name)' out of range") }
        return Int(i)
    }

    func float(_ name: String, _ fallback: Float) throws -> Float {
        guard let a = find(name) else { return fallback }
        guard let f = a.f else { throw error("attribute '\(name)' is not a float") }
        return f
    }

    func ints(_ name: String) throws -> [Int]? {
        guard let a = find(name) else { return nil }
        guard a.ints.allSatisfy({ $0 > Int64(Int32.min) && $0 < Int64(Int32.max) }) else { throw error("attribute '\(name)' out of range") }
        return a.ints.map { Int($0) }
    }

    func string(_ name: String, _ fallback: String) -> String { find(name)?.s ?? fallback }

    func tensor(_ name: String) throws -> Tensor? {
        guard let t = find(name)?.t else { return nil }
        return try TensorDecoding.decode(t, model: model)
    }

    /// kernel_shape / strides / dilations / pads / auto_pad / ceil_mode for 2-D windows.
    func window() throws -> WindowAttributes {
        let ks = try ints("kernel_shape")
        if let ks, ks.count != 2 { throw error("only 2-D kernels are supported, kernel_shape = \(ks)") }
        let strides = try ints("strides") ?? [1, 1]
        let dilations = try ints("dilations") ?? [1, 1]
        let pads = try ints("pads") ?? [0, 0, 0, 0]
        guard strides.count == 2, dilations.count == 2, pads.count == 4 else {
            throw error("only 2-D windows are supported (strides \(strides), dilations \(dilations), pads \(pads))")
        }
        let autoPadName = string("auto_pad", "NOTSET")
        guard let autoPad = WindowAttributes.AutoPad(rawValue: autoPadName) else { throw error("unknown auto_pad '\(autoPadName)'") }
        return WindowAttributes(kernelShape: ks, strides: strides, dilations: dilations, pads: pads,
                                autoPad: autoPad, ceilMode: try int("ceil_mode", 0) != 0)
    }
}
