import GlimpseEngine
import GlimpseTensor
import GlimpseTestSupport

extension SharedData {
    static func npy(_ relative: String) throws -> Tensor { try NPY.decode(bytes(relative)) }
}

func argmax(_ v: ArraySlice<Float>) -> Int {
    var best = v.startIndex
    for i in v.indices where v[i] > v[best] { best = i }
    return best - v.startIndex
}

/// `items` distinct pseudo-random 3 × 224 × 224 images in one batch tensor, and each one's output
/// from a batch-1 run of `model` (for comparing batched runs with single ones).
func imageBatchAndSingleRuns(_ model: CompiledModel, items: Int) throws -> (batch: Tensor, singles: [[Float]]) {
    let input = Tensor(shape: [items, 3, 224, 224], dtype: .float32)
    for i in 0..<input.count { input.f32[i] = Float((i * 7919) % 1000) / 500 - 1 }
    let singles: [[Float]] = try (0..<items).map { item in
        let one = Tensor(shape: [1, 3, 224, 224], dtype: .float32)
        one.rawPointer.copyMemory(from: input.item(item).rawPointer, byteCount: one.byteCount)
        return try model.run([one])[0].floats()
    }
    return (input, singles)
}
