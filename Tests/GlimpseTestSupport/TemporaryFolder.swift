import Foundation
import XCTest

/// A fresh folder under the system's temporary directory, named `glimpse-<prefix>-<uuid>`;
/// `remove()` deletes it with everything inside.
public struct TemporaryFolder: Sendable {
    public let url: URL
    public var path: String { url.path }

    public init(_ prefix: String) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("glimpse-\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func appending(_ name: String) -> URL { url.appendingPathComponent(name) }

    public func remove() { try? FileManager.default.removeItem(at: url) }
}

extension XCTestCase {
    /// A fresh temporary folder (`TemporaryFolder`), removed when the current test ends.
    public func temporaryFolder(_ prefix: String) throws -> TemporaryFolder {
        let folder = try TemporaryFolder(prefix)
        addTeardownBlock { folder.remove() }
        return folder
    }
}
