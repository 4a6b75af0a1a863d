import GlimpseImage
import GlimpseTensor

/// Preprocessed inputs (the Open Inference Protocol's FP32 tensors): they skip decoding and go
/// straight to the model's batching queue, counted like images everywhere else.
extension InferenceService {
    /// Refuses pixels that do not match the model's input (less the batch) before anything is queued.
    func checkPixels(_ request: ClassifyRequest, model: LoadedModel) throws {
        guard request.images.isEmpty else {
            throw ServingError.badParameter("give either encoded images or preprocessed tensors, not both")
        }
        let itemShape = model.queue.itemShape
        guard model.queue.inputDType == .float32 else {
            throw ServingError.badParameter("model \(model.name) takes \(model.queue.inputDType.rawValue) input, not float32; send encoded images")
        }
        guard request.pixelShape == itemShape else {
            throw ServingError.badParameter("model \(model.name) takes items of shape \(itemShape), got \(request.pixelShape)")
        }
        let elements = itemShape.reduce(1, *)
        for (i, values) in request.pixels.enumerated() where values.count != elements {
            throw ServingError.badParameter("item \(i) has \(values.count) values; model \(model.name) takes \(elements)")
        }
    }

    func classifyPixels(_ values: [Float], model: LoadedModel, reason: String, topK: Int, deadline: UInt64?) async throws -> ClassifyResult {
        let start = monotonicNanos()
        let queue = model.queue
        queue.incomingArrived()
        let shape = queue.itemShape
        let tensor = Tensor(shape: Shape(shape), dtype: .float32)
        guard tensor.count == values.count else {
            throw ServingError.badParameter("the tensor has \(values.count) values; model \(model.name) takes \(tensor.count)")
        }
        values.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { tensor.pointer(as: Float.self).update(from: base, count: values.count) }
        }
        let info = ImageInfo(format: "tensor", width: shape.last ?? 0, height: shape.count >= 2 ? shape[shape.count - 2] : 0,
                             orientation: 1)
        return try await finish(tensor, info: info, model: model, reason: reason, topK: topK, deadline: deadline,
                                start: start, decoded: monotonicNanos())
    }
}
