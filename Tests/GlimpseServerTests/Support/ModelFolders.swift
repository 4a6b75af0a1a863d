import Foundation
import GlimpseTestSupport
import XCTest

extension XCTestCase {
    /// A temporary folder with only mnist-8, so a server starts in a moment (removed when the test ends).
    func mnistOnlyFolder(_ label: String) throws -> String {
        let dir = try temporaryFolder(label).url
        try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("mnist-8.onnx").path,
                                                   withDestinationPath: try SharedData.path("models/mnist-8.onnx"))
        try #"{"preprocessing": "mnist"}"#.write(to: dir.appendingPathComponent("mnist-8.json"), atomically: true, encoding: .utf8)
        return dir.path
    }
}
