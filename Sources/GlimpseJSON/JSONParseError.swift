/// A syntax error in JSON text, with the byte offset where it was found.
public struct JSONParseError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public let offset: Int
    public var description: String { "\(message) at byte \(offset)" }

    public init(message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }
}
