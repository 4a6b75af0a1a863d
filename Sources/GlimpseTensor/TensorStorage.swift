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

    /// Allocates `byteCount` bytes, zero-filled.
    public init(byteCount: Int) {
        precondition(byteCount >= 0, "negative byte count")
        self.byteCount = byteCount
        let padded = Self.padded(byteCount)
        self.bytes = UnsafeMutableRawPointer.allocate(byteCount: padded, alignment: TensorStorage.alignment)
        self.bytes.initializeMemory(as: UInt8.self, repeating: 0, count: padded)
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
