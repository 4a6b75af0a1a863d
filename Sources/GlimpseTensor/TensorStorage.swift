import Synchronization

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
    /// Whether the memory goes back to `StorageRecycler` on release.
    private let recycles: Bool

    /// Allocates `byteCount` bytes, zero-filled. With `zeroed: false` only the padding after them is
    /// zeroed: for a caller that writes all `byteCount` bytes before anything reads them (an image
    /// slot the preprocessing fills, a batch assembled from its items), where zero-filling a 600 KB
    /// input first cost as much as its JPEG decode.
    ///
    /// Large storage made with `zeroed: false` is recycled: on release its memory is kept (see
    /// `StorageRecycler`) for the next one of that size, so a server's per-request image slots and
    /// per-batch inputs do not fault fresh pages in from the kernel each time.
    public init(byteCount: Int, zeroed: Bool = true) {
        precondition(byteCount >= 0, "negative byte count")
        self.byteCount = byteCount
        let padded = Self.padded(byteCount)
        recycles = !zeroed && padded >= StorageRecycler.minimumBytes
        self.bytes = (recycles ? StorageRecycler.take(padded) : nil)
            ?? UnsafeMutableRawPointer.allocate(byteCount: padded, alignment: TensorStorage.alignment)
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
        let padded = Self.padded(byteCount)
        ledger?.add(-padded)
        if !recycles || !StorageRecycler.keep(bytes, byteCount: padded) { bytes.deallocate() }
    }
}

/// Released memory of large storage that its next user writes whole before reading (`zeroed:
/// false`), kept by size for reuse, at most `capacityBytes` in all, the most recently released first
/// (its lines may still be in cache). Returning such buffers to the allocator made it hand the pages
/// back to the kernel and fault them in again, zero-filled, on the next request: about 150 page
/// faults for one 224×224 RGB float32 slot.
enum StorageRecycler {
    static let minimumBytes = 64 << 10
    static let capacityBytes = 64 << 20

    private struct Shelf: ~Copyable {
        var buffers: [Int: [UnsafeMutableRawPointer]] = [:]
        var bytes = 0
    }

    private static let shelf = Mutex(Shelf())

    /// A kept buffer of `byteCount` bytes, or nil.
    static func take(_ byteCount: Int) -> UnsafeMutableRawPointer? {
        shelf.withLock { shelf in
            guard let buffer = shelf.buffers[byteCount]?.popLast() else { return nil }
            shelf.bytes -= byteCount
            return buffer
        }
    }

    /// Keeps `buffer` unless that would pass the capacity; false: the caller frees it.
    static func keep(_ buffer: UnsafeMutableRawPointer, byteCount: Int) -> Bool {
        shelf.withLock { shelf in
            guard shelf.bytes + byteCount <= capacityBytes else { return false }
            shelf.bytes += byteCount
            shelf.buffers[byteCount, default: []].append(buffer)
            return true
        }
    }

    /// Bytes kept now.
    static var keptBytes: Int { shelf.withLock { $0.bytes } }
}
