import Foundation
import GlimpseImage
import XCTest

/// Locates the shared test data at `../shared` beside the repository root.
enum SharedData {
    /// Repository root: three levels up from Tests/GlimpseQuantizeTests/<file>.
    static var root: URL {
        URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared")
    }

    static func path(_ relative: String) throws -> String {
        let url = root.appendingPathComponent(relative)
        guard FileManager.default.fileExists(atPath: url.path) else { throw SharedDataMissing(path: url.path) }
        return url.path
    }

    static func bytes(_ relative: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: try path(relative))))
    }

    /// The torchvision / ImageNet preprocessing of squeezenet1.1 (the `imagenet` preset).
    static let imagenet = Preprocessing(width: 224, height: 224, resizeShortSide: 256, crop: .center, channelOrder: .rgb,
                                        scale: 1.0 / 255.0, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225])
}

struct SharedDataMissing: Error, CustomStringConvertible {
    let path: String
    var description: String { "shared test data missing: \(path) (expected ../shared beside the repository)" }
}
