#if canImport(Glibc)
import Glibc
#endif

/// A dense, row-major tensor over 64-byte aligned storage.
public struct Tensor: @unchecked Sendable, CustomStringConvertible {
    public var shape: Shape
    public let dtype: DType
    public let storage: TensorStorage
    /// Offset in bytes from the start of `storage` (non-zero for views such as one batch item).
    public let byteOffset: Int

    /// A new zero-filled tensor; with `zeroed: false` its elements are left for the caller to write,
    /// all of them, before anything reads them (see `TensorStorage.init(byteCount:zeroed:)`).
    public init(shape: Shape, dtype: DType = .float32, zeroed: Bool = true) {
        self.shape = shape
        self.dtype = dtype
        self.storage = TensorStorage(byteCount: shape.count * dtype.byteSize, zeroed: zeroed)
        self.byteOffset = 0
    }

    /// A tensor over existing storage.
    public init(shape: Shape, dtype: DType, storage: TensorStorage, byteOffset: Int = 0) {
        precondition(byteOffset >= 0 && byteOffset + shape.count * dtype.byteSize <= storage.byteCount, "tensor view out of storage bounds")
        self.shape = shape
        self.dtype = dtype
        self.storage = storage
        self.byteOffset = byteOffset
    }

    /// A float32 tensor holding a copy of `values`.
    public init(shape: Shape, floats values: [Float]) {
        precondition(values.count == shape.count, "value count \(values.count) does not match shape \(shape)")
        self.init(shape: shape, dtype: .float32)
        values.withUnsafeBufferPointer { src in
            if let base = src.baseAddress {
                rawPointer.copyMemory(from: base, byteCount: values.count * 4)
            }
        }
    }

    @inlinable
    public var count: Int { shape.count }

    @inlinable
    public var byteCount: Int { shape.count * dtype.byteSize }

    @inlinable
    public var rawPointer: UnsafeMutableRawPointer { storage.bytes + byteOffset }

    /// Typed pointer to the elements. The caller must pick the type matching `dtype`.
    @inlinable
    public func pointer<T>(as type: T.Type) -> UnsafeMutablePointer<T> {
        rawPointer.assumingMemoryBound(to: T.self)
    }

    /// float32 elements as an array (converting from float16 when needed).
    public func floats() -> [Float] {
        switch dtype {
        case .float32:
            return Array(UnsafeBufferPointer(start: pointer(as: Float.self), count: count))
        case .float16:
            let p = rawPointer.assumingMemoryBound(to: UInt16.self)
            return (0..<count).map { Float(Float16(bitPattern: p[$0])) }
        case .int8:
            let p = pointer(as: Int8.self)
            return (0..<count).map { Float(p[$0]) }
        case .uint8, .bool:
            let p = pointer(as: UInt8.self)
            return (0..<count).map { Float(p[$0]) }
        case .int32:
            let p = pointer(as: Int32.self)
            return (0..<count).map { Float(p[$0]) }
        case .int64:
            let p = pointer(as: Int64.self)
            return (0..<count).map { Float(p[$0]) }
        }
    }

    /// A view of item `index` along the outermost (batch) dimension.
    public func item(_ index: Int) -> Tensor {
        precondition(shape.rank >= 1 && index >= 0 && index < shape[0], "batch index out of range")
        var inner = shape
        inner.dims.removeFirst()
        return Tensor(shape: inner, dtype: dtype, storage: storage, byteOffset: byteOffset + index * inner.count * dtype.byteSize)
    }

    /// Whether `other` has the same dtype, shape and bytes (true at once when both view the same bytes).
    public func sameContents(as other: Tensor) -> Bool {
        guard dtype == other.dtype, shape == other.shape else { return false }
        if storage === other.storage && byteOffset == other.byteOffset { return true }
        return memcmp(rawPointer, other.rawPointer, byteCount) == 0
    }

    public var description: String { "Tensor(\(dtype.rawValue)\(shape))" }
}
