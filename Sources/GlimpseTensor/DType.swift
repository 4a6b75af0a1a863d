/// Element types a tensor can hold.
public enum DType: String, Sendable, Hashable, CaseIterable, Codable {
    case float32
    case float16
    case int8
    case uint8
    case int32
    case int64
    case bool

    /// Size of one element in bytes.
    @inlinable
    public var byteSize: Int {
        switch self {
        case .float32, .int32: return 4
        case .float16: return 2
        case .int8, .uint8, .bool: return 1
        case .int64: return 8
        }
    }
}
