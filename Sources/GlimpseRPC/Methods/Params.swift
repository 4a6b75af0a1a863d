import Foundation

/// Typed access to by-name params, with -32602 errors that name the parameter.
struct Params {
    let object: [String: JSONValue]

    init(_ params: JSONValue?, method: String) throws {
        switch params {
        case nil, .null?: object = [:]
        case .object(let o)?: object = o
        case .array?: throw RPCError.invalidParams("\(method) takes its params by name (a JSON object), not an array")
        default: throw RPCError.invalidParams("params must be an object")
        }
    }

    func string(_ key: String) throws -> String? {
        guard let v = object[key], v != .null else { return nil }
        guard case .string(let s) = v else { throw RPCError.invalidParams("\"\(key)\" must be a string, got \(v.typeName)") }
        return s
    }

    func int(_ key: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let v = object[key], v != .null else { return nil }
        guard let i = v.intValue else { throw RPCError.invalidParams("\"\(key)\" must be an integer, got \(v.typeName)") }
        guard range.contains(i) else {
            throw RPCError.invalidParams("\"\(key)\" must be between \(range.lowerBound) and \(range.upperBound), got \(i)")
        }
        return i
    }

    func stringArray(_ key: String) throws -> [String]? {
        guard let v = object[key], v != .null else { return nil }
        guard case .array(let a) = v else { throw RPCError.invalidParams("\"\(key)\" must be an array of strings, got \(v.typeName)") }
        return try a.enumerated().map { i, e in
            guard case .string(let s) = e else { throw RPCError.invalidParams("\"\(key)[\(i)]\" must be a string, got \(e.typeName)") }
            return s
        }
    }

    /// Rejects members the method does not know, so typos are not silently ignored.
    func rejectUnknown(allowed: Set<String>, method: String) throws {
        let unknown = object.keys.filter { !allowed.contains($0) }.sorted()
        guard unknown.isEmpty else {
            throw RPCError.invalidParams("unknown parameter\(unknown.count > 1 ? "s" : "") \(unknown.map { "\"\($0)\"" }.joined(separator: ", ")) for \(method); accepted: \(allowed.sorted().joined(separator: ", "))")
        }
    }
}
