import Foundation

/// Locates `../shared` (the test data beside the repository) and the repository root.
enum SharedData {
    static let repoRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let root: URL = repoRoot.deletingLastPathComponent().appendingPathComponent("shared")

    static func path(_ relative: String) throws -> String {
        let p = root.appendingPathComponent(relative).path
        guard FileManager.default.fileExists(atPath: p) else { throw SharedDataMissing(path: p) }
        return p
    }

    static func bytes(_ relative: String) throws -> [UInt8] {
        let p = try path(relative)
        guard let d = FileManager.default.contents(atPath: p) else { throw SharedDataMissing(path: p) }
        return [UInt8](d)
    }
}

struct SharedDataMissing: Error, CustomStringConvertible {
    let path: String
    var description: String { "test data missing: \(path). The shared test data must sit beside the repository as ../shared." }
}
