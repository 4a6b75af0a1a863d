import Foundation

/// The shared test data: `$GLIMPSE_SHARED` when set, else `../shared` beside the repository root.
public enum SharedData {
    /// The repository root (two levels above this file's folder).
    public static let repoRoot: URL = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static let root: URL = {
        if let env = ProcessInfo.processInfo.environment["GLIMPSE_SHARED"], !env.isEmpty {
            return URL(fileURLWithPath: env)
        }
        return repoRoot.deletingLastPathComponent().appendingPathComponent("shared")
    }()

    /// The path of `relative` inside the shared data; throws when it is missing.
    public static func path(_ relative: String) throws -> String {
        let p = root.appendingPathComponent(relative).path
        guard FileManager.default.fileExists(atPath: p) else { throw SharedDataMissing(path: p) }
        return p
    }

    public static func data(_ relative: String) throws -> Data {
        let p = try path(relative)
        guard let d = FileManager.default.contents(atPath: p) else { throw SharedDataMissing(path: p) }
        return d
    }

    public static func bytes(_ relative: String) throws -> [UInt8] { [UInt8](try data(relative)) }

    /// The names in a shared folder, sorted.
    public static func files(in relative: String) throws -> [String] {
        let p = try path(relative)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: p) else { throw SharedDataMissing(path: p) }
        return names.sorted()
    }
}

public struct SharedDataMissing: Error, CustomStringConvertible {
    public let path: String
    public init(path: String) { self.path = path }
    public var description: String {
        "test data missing: \(path). The shared test data must sit beside the repository as ../shared (or set GLIMPSE_SHARED)."
    }
}
