import GlimpseEngine
import GlimpseTensor

extension BatchQueue {
    /// The batch's input: its items one after the other, every byte copied (so not zero-filled first);
    /// a batch of one is its item's own storage seen with the batch dimension, with no copy.
    static func assemble(_ items: [Tensor], itemShape: [Int], dtype: DType) throws -> Tensor {
        let shape = Shape([items.count] + itemShape)
        let itemBytes = Shape(itemShape).count * dtype.byteSize
        for item in items where item.byteCount != itemBytes || item.dtype != dtype {
            throw EngineError("input item has \(item.byteCount) bytes of \(item.dtype), the model expects \(itemBytes) of \(dtype)")
        }
        if items.count == 1, let item = items.first {
            return Tensor(shape: shape, dtype: dtype, storage: item.storage, byteOffset: item.byteOffset)
        }
        let input = Tensor(shape: shape, dtype: dtype, zeroed: false)
        for (i, item) in items.enumerated() {
            (input.rawPointer + i * itemBytes).copyMemory(from: item.rawPointer, byteCount: itemBytes)
        }
        return input
    }
}
