import GlimpseImage
import GlimpseJSON
import GlimpseServing

/// How the dispatcher runs a `classify` call it read as a `ClassifyCall`: the service's own
/// `classify`, with the limits `ClassifyParams` checks against.
public struct ClassifyFastPath: Sendable {
    let limits: ServingConfiguration
    let run: @Sendable (ClassifyRequest) async throws -> [ClassifyResult]

    public init(limits: ServingConfiguration, run: @escaping @Sendable (ClassifyRequest) async throws -> [ClassifyResult]) {
        self.limits = limits
        self.run = run
    }

    /// The service's `classify`.
    public init(service: InferenceService) {
        self.init(limits: service.configuration) { try await service.classify($0) }
    }
}

/// A `classify` call in the shape clients send it: one JSON-RPC object with an `id`, one base64
/// `image` and the scalar options, read straight from the body into `ClassifyParams`, without a
/// `JSONValue` tree (its dictionaries, their hashing and a `String` of the whole image).
///
/// `parse` accepts only bodies that the general path would run with the same parameters and answer
/// with the same reply; for anything else (a batch, a notification, `images`, an escape in the image
/// or in a key, a repeated or unknown member, a value of another type or out of range, bad base64,
/// trailing bytes) it returns nil, and the dispatcher's general path parses the body and gives its
/// exact answer or error. `ClassifyCallTests` checks that both paths agree.
struct ClassifyCall {
    /// The call's id: an integer, a string or null, echoed in the reply.
    var id: JSONValue
    var params: ClassifyParams
    /// The `model` member as sent (nil when absent or null), for the request metrics of a failed call.
    var requestedModel: String?

    /// The call in `body`, or nil when the body is not in the shape this reads (see the type).
    static func parse(_ body: UnsafeBufferPointer<UInt8>, limits: ServingConfiguration) -> ClassifyCall? {
        var reader = Reader(lexer: JSONLexer(bytes: body), limits: limits)
        return reader.call()
    }

    private struct Reader {
        var lexer: JSONLexer
        let limits: ServingConfiguration

        // Members seen, as bits, so a repeated one sends the body to the general path (which keeps
        // the last).
        private var seen: UInt32 = 0

        init(lexer: JSONLexer, limits: ServingConfiguration) {
            self.lexer = lexer
            self.limits = limits
        }

        mutating func call() -> ClassifyCall? {
            var id: JSONValue?
            var isVersion2 = false, isClassify = false
            var params: ClassifyParams?
            var model: String?
            guard openObject() else { return nil }
            var isFirst = true
            members: while true {
                switch nextMember(&isFirst) {
                case .end: break members
                case .invalid: return nil
                case .key(let key):
                    if lexer.bytes(key, equal: "jsonrpc") {
                        guard first(0), let s = string(), s == "2.0" else { return nil }
                        isVersion2 = true
                    } else if lexer.bytes(key, equal: "id") {
                        guard first(1), let v = idValue() else { return nil }
                        id = v
                    } else if lexer.bytes(key, equal: "method") {
                        guard first(2), let s = string(), s == "classify" else { return nil }
                        isClassify = true
                    } else if lexer.bytes(key, equal: "params") {
                        guard first(3), let p = classifyParams(model: &model) else { return nil }
                        params = p
                    } else {
                        return nil
                    }
                }
            }
            guard isVersion2, isClassify, let id, let params else { return nil }
            lexer.skipWhitespace()
            guard lexer.isAtEnd else { return nil }
            return ClassifyCall(id: id, params: params, requestedModel: model)
        }

        /// The params object: one `image` and the options `ClassifyParams` reads, each checked as it
        /// checks them.
        mutating func classifyParams(model: inout String?) -> ClassifyParams? {
            var image: [UInt8]?
            var topK = 5
            var crop: CropMode?
            var deadlineMs: Double?, minAccuracy: Double?
            var clientID: String?
            guard openObject() else { return nil }
            var isFirst = true
            members: while true {
                let key: Range<Int>
                switch nextMember(&isFirst) {
                case .end: break members
                case .invalid: return nil
                case .key(let k): key = k
                }
                if lexer.bytes(key, equal: "image") {
                    guard first(4), lexer.current == UInt8(ascii: "\""), let text = lexer.plainString(),
                          let decoded = try? Base64.decode(utf8: UnsafeBufferPointer(rebasing: lexer.bytes[text]), field: "image")
                    else { return nil }
                    image = decoded
                } else if lexer.bytes(key, equal: "model") {
                    guard first(5) else { return nil }
                    if null() { continue }
                    guard let s = string() else { return nil }
                    model = s
                } else if lexer.bytes(key, equal: "top_k") {
                    guard first(6) else { return nil }
                    if null() { continue }
                    guard let (text, isInteger) = number(), isInteger, let k = Int(text),
                          (1...limits.maxTopK).contains(k) else { return nil }
                    topK = k
                } else if lexer.bytes(key, equal: "crop") {
                    guard first(7) else { return nil }
                    if null() { continue }
                    guard let s = string(), let mode = CropMode(rawValue: s) else { return nil }
                    crop = mode
                } else if lexer.bytes(key, equal: "deadline_ms") {
                    guard first(8) else { return nil }
                    if null() { continue }
                    guard let (text, _) = number(), let v = Double(text), v > 0, v <= 3_600_000 else { return nil }
                    deadlineMs = v
                } else if lexer.bytes(key, equal: "min_accuracy") {
                    guard first(9) else { return nil }
                    if null() { continue }
                    guard let (text, _) = number(), let v = Double(text), v >= 0, v <= 1 else { return nil }
                    minAccuracy = v
                } else if lexer.bytes(key, equal: "client_id") {
                    guard first(10) else { return nil }
                    if null() { continue }
                    guard let s = string(), s.utf8.count <= 256 else { return nil }
                    clientID = s
                } else {
                    return nil
                }
            }
            guard let image else { return nil }
            return ClassifyParams(image: image, model: model ?? "auto", topK: topK, crop: crop, deadlineMs: deadlineMs,
                                  minAccuracy: minAccuracy, clientID: clientID)
        }

        enum Member {
            case key(Range<Int>)
            case end
            case invalid
        }

        /// Consumes the `{` of an object (after whitespace); false when there is none.
        mutating func openObject() -> Bool {
            lexer.skipWhitespace()
            guard lexer.current == UInt8(ascii: "{") else { return false }
            lexer.index += 1
            return true
        }

        /// The next member's key (without escapes), the lexer then at its value; `.end` after the
        /// closing `}`. `isFirst` is true before the first member.
        mutating func nextMember(_ isFirst: inout Bool) -> Member {
            lexer.skipWhitespace()
            if isFirst {
                isFirst = false
                if lexer.current == UInt8(ascii: "}") {
                    lexer.index += 1
                    return .end
                }
            } else {
                switch lexer.current {
                case UInt8(ascii: ","):
                    lexer.index += 1
                    lexer.skipWhitespace()
                case UInt8(ascii: "}"):
                    lexer.index += 1
                    return .end
                default: return .invalid
                }
            }
            guard lexer.current == UInt8(ascii: "\""), let key = lexer.plainString() else { return .invalid }
            lexer.skipWhitespace()
            guard lexer.current == UInt8(ascii: ":") else { return .invalid }
            lexer.index += 1
            lexer.skipWhitespace()
            return .key(key)
        }

        /// Marks member `bit` as seen; false when it was already.
        mutating func first(_ bit: UInt32) -> Bool {
            defer { seen |= 1 << bit }
            return seen & (1 << bit) == 0
        }

        mutating func string() -> String? {
            guard lexer.current == UInt8(ascii: "\"") else { return nil }
            return try? lexer.string()
        }

        mutating func number() -> (text: String, isInteger: Bool)? {
            guard let c = lexer.current, c == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) else { return nil }
            return try? lexer.number()
        }

        mutating func null() -> Bool {
            guard lexer.current == UInt8(ascii: "n") else { return false }
            return (try? lexer.expectLiteral("null")) != nil
        }

        /// An id the general path echoes as it was sent: an integer that fits an `Int`, a string or null.
        mutating func idValue() -> JSONValue? {
            if null() { return .null }
            if lexer.current == UInt8(ascii: "\"") { return string().map(JSONValue.string) }
            guard let (text, isInteger) = number(), isInteger, let i = Int(text) else { return nil }
            return .int(i)
        }
    }
}
