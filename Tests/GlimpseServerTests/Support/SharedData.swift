import Foundation

/// Locates `../shared` (the test data beside the repository).
enum SharedData {
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared")

    static func path(_ relative: String) throws -> String {
        let p = root.appendingPathComponent(relative).path
        guard FileManager.default.fileExists(atPath: p) else { throw SharedDataMissing(path: p) }
        return p
    }

    static func data(_ relative: String) throws -> Data {
        let p = try path(relative)
        guard let d = FileManager.default.contents(atPath: p) else { throw SharedDataMissing(path: p) }
        return d
    }
}

struct SharedDataMissing: Error, CustomStringConvertible {
    let path: String
    var description: String { "test data missing: \(path). The shared test data must sit beside the repository as ../shared." }
}
