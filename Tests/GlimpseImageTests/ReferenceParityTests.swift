import GlimpseTestSupport
import XCTest
import GlimpseTensor
@testable import GlimpseImage

/// End-to-end parity with the shared onnxruntime reference inputs, which were produced with Pillow.
final class ReferenceParityTests: XCTestCase {
    func testCarMatchesReferenceInputTensor() throws {
        // reference/squeezenet1.1/input.npy holds 4 preprocessed images; item 2 is images/imagenet/car.jpg.
        let npy = try NPY.decode([UInt8](try SharedData.data("reference/squeezenet1.1/input.npy")))
        XCTAssertEqual(npy.shape.dims, [4, 3, 224, 224])
        let reference = Array(npy.floats()[(2 * 3 * 224 * 224)..<(3 * 3 * 224 * 224)])
        let ours = try preprocess(try SharedData.data("images/imagenet/car.jpg")).values
        var worst: Float = 0
        for i in ours.indices { worst = max(worst, abs(ours[i] - reference[i])) }
        XCTAssertLessThan(worst, 1e-5, "car.jpg differs from the reference input by up to \(worst)")
    }

    func testDCTScalingPoliciesStayCloseToPillow() throws {
        // With DCT scaling off the output is Pillow's; the scaled policies stay within a few levels.
        let data = try SharedData.data("images/imagenet/samoyed_dog.jpg")   // 1546x1213: decoded at 1/4
        let exact = try preprocess(data, options: DecodeOptions(dctScaling: .off)).values
        for policy in [DCTScaling.powersOfTwo, .eighths] {
            let scaled = try preprocess(data, options: DecodeOptions(dctScaling: policy)).values
            XCTAssertLessThan(meanAbsDiff(scaled, exact), 0.06, "\(policy)")   // ≈ 3.5 / 255 after std
        }
    }
}
