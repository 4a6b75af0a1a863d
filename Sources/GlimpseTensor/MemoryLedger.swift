#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Live bytes of tensor storage charged to one owner (a model's weights, its execution plans).
///
/// A `TensorStorage` allocated inside `charging { ... }` on the same thread is charged to the ledger
/// and credited back when it is freed, whichever thread frees it, so `bytes` is what the owner holds
/// now, not what it ever allocated. Storage allocated outside any ledger is not counted.
public final class MemoryLedger: Sendable {
    private let live = Atomic<Int>(0)

    public init() {}

    /// Bytes held now (each storage counted at its padded, allocated size).
    public var bytes: Int { live.load(ordering: .relaxed) }

    func add(_ count: Int) { live.add(count, ordering: .relaxed) }

    /// Runs `body` with this thread's tensor allocations charged to this ledger (nested calls
    /// charge the innermost ledger; the previous one is restored afterwards).
    public func charging<T>(_ body: () throws -> T) rethrows -> T {
        let previous = Self.current
        Self.setCurrent(self)
        defer { Self.setCurrent(previous) }
        return try body()
    }

    /// The ledger this thread charges now, if any.
    static var current: MemoryLedger? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<MemoryLedger>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// `charging` keeps `self` alive for the whole scope, so the slot holds it unretained.
    private static func setCurrent(_ ledger: MemoryLedger?) {
        pthread_setspecific(key, ledger.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) })
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()
}
