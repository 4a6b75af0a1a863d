import GlimpseTestSupport
import XCTest
@testable import GlimpseImage

/// Truncated or damaged files give a corrupt-image error naming the library's reason, never a crash.
final class CorruptInputTests: XCTestCase {
    func testTruncatedJPEG() throws {
        for name in ["imagenet/car.jpg", "formats/pillow_icc_profile_big_progressive_beach.jpg", "formats/pillow_hopper_gray.jpg"] {
            let data = try SharedData.data("images/\(name)")
            for fraction in [0.01, 0.1, 0.5, 0.9, 0.99] {
                let cut = data.prefix(max(4, Int(Double(data.count) * fraction)))
                assertImageError(.corrupt, ["truncated or corrupt JPEG: "]) { try preprocess(Data(cut)) }
            }
        }
    }

    func testTruncatedPNG() throws {
        for name in ["imagenet/fish.png", "formats/pillow_pil123rgba.png"] {
            let data = try SharedData.data("images/\(name)")
            for fraction in [0.001, 0.1, 0.5, 0.9, 0.999] {
                let cut = data.prefix(max(9, Int(Double(data.count) * fraction)))
                assertImageError(.corrupt, ["truncated or corrupt PNG: "]) { try preprocess(Data(cut)) }
            }
        }
        assertImageError(.corrupt, ["PNG"]) { try preprocess(Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])) }
    }

    func testDamagedBytesNeverCrash() throws {
        // Bounded deterministic fuzz: flip bytes; the result is either an image or an ImageError.
        for name in ["formats/pillow_hopper.jpg", "formats/pillow_hopper.png", "formats/pillow_hopper_orientation_6.jpg"] {
            let original = [UInt8](try SharedData.data("images/\(name)"))
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            for _ in 0..<60 {
                var bytes = original
                for _ in 0..<4 {
                    state = state &* 6364136223846793005 &+ 1442695040888963407
                    let at = 2 + Int(state >> 33) % (bytes.count - 2)
                    bytes[at] = UInt8(truncatingIfNeeded: state >> 13)
                }
                do { _ = try preprocess(Data(bytes)) } catch is ImageError {} catch { XCTFail("\(error)") }
            }
        }
    }

    func testJPEGSignatureWithGarbage() {
        assertImageError(.corrupt, ["truncated or corrupt JPEG"]) { try preprocess(Data([0xFF, 0xD8, 0xFF, 0x00, 1, 2, 3])) }
    }
}
