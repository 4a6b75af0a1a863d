import Foundation
import GlimpseKernels
import GlimpseEngine
import GlimpseONNX
import GlimpseTensor
@testable import GlimpseServing
import GlimpseTestSupport
import XCTest

/// What a loaded model holds (`models.list`'s `memory`), that it is all given back when the model
/// goes, and `--memory-budget`.
final class ModelMemoryTests: XCTestCase {
    let models = SharedData.repoRoot.appendingPathComponent("models").path

    func testLoadedModelReportsWeightsAndPlans() throws {
        let service = InferenceService(configuration: .init(engineThreads: 1))
        defer { service.shutdown() }
        let large = try service.registry.load(named: "digits-large", directory: models)
        let small = try service.registry.load(named: "digits-small", directory: models)
        let l = large.memory, s = small.memory
        // digits-large holds about 250,000 float32 weights (1.0 MB file); packed copies come on top.
        XCTAssertGreaterThan(l.weightBytes, 900_000)
        XCTAssertLessThan(l.weightBytes, 8_000_000)
        XCTAssertGreaterThan(l.planBytes, 0)
        XCTAssertGreaterThanOrEqual(l.plans, 1)
        XCTAssertEqual(l.totalBytes, l.weightBytes + l.planBytes)
        XCTAssertLessThan(s.weightBytes, l.weightBytes / 4, "digits-small has 8/16 channels")
    }

    /// A model holds its weights about once: packed, not also as imported, and packed once where
    /// two passes share them (cifar10-large runs the image and its mirror image through the same
    /// weights; it held 5.1 MB of weights for a 1.66 MB file when each pass packed its own copy and
    /// the imported constants stayed).
    func testWeightsAreHeldAboutOnce() throws {
        for name in ["cifar10-large", "mobilenetv2-12-int8"] {
            let path = (models as NSString).appendingPathComponent(name + ".onnx")
            let fileBytes = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            // The narrow int8 layout (the VNNI and portable kernels' s8 weights) is the one held "once".
            // (Each model is read while it is held: its weights go with it.)
            let narrowModel = try KernelDispatch.withISA(.portable) {
                try ONNXLoader.load(path: path, options: EngineOptions(threads: 1, widenFixedBatch: true))
            }
            let narrow = withExtendedLifetime(narrowModel) { narrowModel.weightMemory.bytes }
            XCTAssertLessThan(narrow, fileBytes + fileBytes / 5, "\(name): \(narrow) bytes of weights for a \(fileBytes)-byte file")
            // The kernels in use: the AVX2 int8 GEMM holds its weights as int16 pairs (`QS8Gemm.packsWide`),
            // at most twice the narrow model, and only when it runs.
            let model = try ONNXLoader.load(path: path, options: EngineOptions(threads: 1, widenFixedBatch: true))
            let held = withExtendedLifetime(model) { model.weightMemory.bytes }
            if QS8Gemm.packsWide && name.hasSuffix("int8") {
                XCTAssertGreaterThan(held, narrow, name)
                XCTAssertLessThan(held, 2 * narrow, "\(name): \(held) bytes of weights held wide, \(narrow) narrow")
            } else {
                XCTAssertEqual(held, narrow, name)
            }
        }
    }

    /// Calibration times batches of 1, 2, 4 and 8 but keeps only batch 1's plan, so that a reload does
    /// not hold a plan per size twice (old and new version) while the old one still serves; a later
    /// batch builds its plan again.
    func testCalibrationKeepsOnlyBatchOnesPlan() throws {
        let service = InferenceService(configuration: .init(engineThreads: 1))
        defer { service.shutdown() }
        let loaded = try service.registry.load(named: "digits-large", directory: models)
        XCTAssertTrue(loaded.queue.calibrationSummary.contains("8: "), loaded.queue.calibrationSummary)
        let calibrated = loaded.memory
        XCTAssertEqual(calibrated.plans, 1)
        let input = Tensor(shape: Shape([8] + loaded.model.inputs[0].shape.dropFirst()), dtype: loaded.model.inputs[0].dtype)
        _ = try loaded.model.run([input], parallel: false)
        let served = loaded.memory
        XCTAssertEqual(served.plans, 2, "the batch (whole, or as items beside batch 1's plan) built one plan")
    }

    /// Every tensor of a model (weights, packed weights, plans of every batch size) is freed with it:
    /// the ledgers return to zero, load after load (reload churn must not keep memory).
    func testLedgersReturnToZeroWhenTheModelIsGone() throws {
        let path = (models as NSString).appendingPathComponent("cifar10-large-int8.onnx")
        for _ in 0..<3 {
            var weights: MemoryLedger?, plans: MemoryLedger?
            do {
                let model = try ONNXLoader.load(path: path, options: EngineOptions(threads: 2, widenFixedBatch: true))
                let input = Tensor(shape: Shape([4] + model.inputs[0].shape.dropFirst()), dtype: .float32)
                _ = try model.run([input])
                weights = model.weightMemory
                plans = model.planMemory
                XCTAssertGreaterThan(model.weightMemory.bytes, 0)
                XCTAssertGreaterThan(model.planMemory.bytes, 0)
            }
            XCTAssertEqual(weights?.bytes, 0, "weight tensors still held after the model was released")
            XCTAssertEqual(plans?.bytes, 0, "plan tensors still held after the model was released")
        }
    }

    func testBudgetRefusesALoadThatWouldExceedIt() throws {
        var configuration = ServingConfiguration(engineThreads: 1)
        let probe = InferenceService(configuration: configuration)
        let need = try probe.registry.load(named: "digits-small", directory: models).memory.totalBytes
        probe.shutdown()

        configuration.memoryBudgetBytes = need + need / 2
        let service = InferenceService(configuration: configuration)
        defer { service.shutdown() }
        XCTAssertNoThrow(try service.registry.load(named: "digits-small", directory: models))
        XCTAssertThrowsError(try service.registry.load(named: "digits-large", directory: models)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("digits-large") && text.contains("--memory-budget"), text)
        }
        XCTAssertEqual(service.registry.all.map(\.name), ["digits-small"], "the refused model is not loaded")
        // Reloading the loaded model replaces it: the old version does not count against the budget.
        XCTAssertNoThrow(try service.registry.load(named: "digits-small", directory: models))
    }

    /// A budget under the model's weights refuses the load before the weights are packed, with the
    /// same flag named.
    func testBudgetRefusesBeforePackingWhenTheWeightsAloneDoNotFit() throws {
        let probe = InferenceService(configuration: ServingConfiguration(engineThreads: 1))
        let weights = try probe.registry.load(named: "digits-large", directory: models).memory.weightBytes
        probe.shutdown()

        var configuration = ServingConfiguration(engineThreads: 1)
        configuration.memoryBudgetBytes = weights / 4  // the packed copies alone are about half of `weights`
        let service = InferenceService(configuration: configuration)
        defer { service.shutdown() }
        XCTAssertThrowsError(try service.registry.load(named: "digits-large", directory: models)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("model digits-large needs at least") && text.contains("--memory-budget")
                          && text.contains("refused before its weights were packed"), text)
        }
        XCTAssertTrue(service.registry.all.isEmpty)
    }
}
