/// Byte storage for tensors, aligned to 64 bytes (one cache line, one AVX-512 register).
///
/// The storage is a reference type: tensors that share it share memory. It is `@unchecked Sendable`
/// because ownership is handed between threads explicitly (a batch slot is written by one thread,
/// then read by the engine after the hand-off).
public final class TensorStorage: @unchecked Sendable {
    public static let alignment = 64

    public let byteCount: Int
    public let bytes: UnsafeMutableRawPointer
    /// The ledger charged for this storage (see `MemoryLedger`), credited back on release.
    private let ledger: MemoryLedger?

    /// Allocates `byteCount` bytes, zero-filled. With `zeroed: false` only the padding after them is
    /// zeroed: for a caller that writes all `byteCount` bytes before anything reads them (an image
    /// slot the preprocessing fills, a batch assembled from its items), where zero-filling a 600 KB
    /// input first cost as much as its JPEG decode.
    public init(byteCount: Int, zeroed: Bool = true) {
        precondition(byteCount >= 0, "negative byte count")
        self.byteCount = byteCount
        let padded = Self.padded(byteCount)
        self.bytes = UnsafeMutableRawPointer.allocate(byteCount: padded, alignment: TensorStorage.alignment)
        if zeroed {
            self.bytes.initializeMemory(as: UInt8.self, repeating: 0, count: padded)
        } else {
            (self.bytes + byteCount).initializeMemory(as: UInt8.self, repeating: 0, count: padded - byteCount)
        }
        self.ledger = MemoryLedger.current
        ledger?.add(padded)
    }

    /// Bytes allocated for `byteCount`: rounded up so vector loads of a whole 64-byte line past the
    /// last element stay in bounds.
    static func padded(_ byteCount: Int) -> Int {
        max(alignment, (byteCount + alignment - 1) / alignment * alignment)
    }

    deinit {
        ledger?.add(-Self.padded(byteCount))
        bytes.deallocate()
    }
}
