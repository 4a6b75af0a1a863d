import GlimpseEngine
import GlimpseTensor
import GlimpseTestSupport
import XCTest

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

/// Runs the first `batch` images of `input` (from `imageBatchAndSingleRuns`) as one batch and checks
/// that each item's 1000 outputs are its batch-1 run's, `singles[item]`, within 1e-5.
func assertBatchRunMatchesSingleRuns(_ model: CompiledModel, _ input: Tensor, batch: Int, parallel: Bool, singles: [[Float]],
                                     _ context: String, file: StaticString = #filePath, line: UInt = #line) throws {
    let view = Tensor(shape: [batch, 3, 224, 224], dtype: .float32, storage: input.storage)
    let out = try model.run([view], parallel: parallel)[0]
    XCTAssertEqual(out.shape.dims, [batch, 1000], context, file: file, line: line)
    let all = out.floats()
    for item in 0..<batch {
        let err = relativeError(Array(all[(item * 1000)..<(item * 1000 + 1000)]), singles[item])
        XCTAssertLessThanOrEqual(err, 1e-5, "\(context), item \(item)", file: file, line: line)
    }
}
