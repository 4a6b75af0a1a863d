import GlimpseTensor

/// Running a graph up to named tensors: the named values become the graph's outputs, and the nodes
/// that only fed the old outputs are removed. Feature extraction (`glimpse train`) runs a classifier
/// this way up to its pooled feature vector.
extension Graph {
    /// Makes the values named `names` the graph's outputs, in that order, as float32, and removes
    /// every node none of them needs. Call it before the optimizer runs, while the values still
    /// have the names of the imported file. Throws when a name is not a value the graph computes
    /// (an input, an initializer or a missing name).
    public func cut(at names: [String]) throws {
        guard !names.isEmpty else { throw EngineError("\(name): no tensor named to cut the graph at") }
        let producers = producers()
        var byName: [String: Int] = [:]
        for (v, value) in values.enumerated() where producers[v] != nil { byName[value.name] = v }
        var selected: [(value: Int, dtype: DType)] = []
        for wanted in names {
            guard let v = byName[wanted] else {
                let known = values.indices.filter { producers[$0] != nil }.suffix(5).map { values[$0].name }
                throw EngineError("\(name): no computed tensor '\(wanted)' to cut the graph at (the last ones are \(known.joined(separator: ", ")))")
            }
            selected.append((v, .float32))
        }
        outputs = selected
        DeadNodeElimination.run(self)
    }
}
