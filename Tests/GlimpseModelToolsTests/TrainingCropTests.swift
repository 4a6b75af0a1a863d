import GlimpseImage
import GlimpseModelTools
import GlimpseTestSupport
import XCTest

/// `glimpse train`'s default crop: `fill` for images smaller than the base's input, else the base's.
final class TrainingCropTests: XCTestCase {
    let imagenet = Preprocessing(width: 224, height: 224)

    func testSmallPhotosAreFilledLargeOnesKeepTheBasesCrop() throws {
        let cifar = try EvalDataset.load(SharedData.path("datasets/cifar10-jpeg/test.tar")).samples.prefix(50)
        XCTAssertEqual(cifar.count, 50)
        XCTAssertEqual(TrainingCrop.choose(for: Array(cifar), input: imagenet), .fill, "32×32 photos for a 224×224 base")
        // The same photos for a base whose input is smaller than they are keep its crop.
        XCTAssertNil(TrainingCrop.choose(for: Array(cifar), input: Preprocessing(width: 28, height: 28)))
        let photos = try ["samoyed_dog.jpg", "car.jpg", "elephants.jpg"].map { name in
            EvalSample(label: "x", image: .encoded([UInt8](try SharedData.data("images/imagenet/\(name)"))), source: name)
        }
        XCTAssertNil(TrainingCrop.choose(for: photos, input: imagenet), "photos larger than the input keep the base's crop")
        XCTAssertNil(TrainingCrop.choose(for: [], input: imagenet))
    }
}
