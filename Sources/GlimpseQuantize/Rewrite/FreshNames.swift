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
