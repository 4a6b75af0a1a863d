import CNGHTTP2
#if canImport(Glibc)
import Glibc
#endif

/// The allocator of one nghttp2 session: small blocks (up to `pooledBytes`) go back to per-size free
/// lists instead of to `malloc`, so the stream, frame and header allocations nghttp2 makes for every
/// request cost a few instructions each once the pool is warm. Used only by the thread that drives its
/// session (creation hands over to the loop thread before the loop starts); freed after the session.
///
/// Each block carries a 16-byte header with its size class, so blocks stay 16-byte aligned.
final class NGHTTP2MemoryPool {
    private static let header = 16
    private static let classes = 64  // size classes of 16 bytes: up to 1 KiB pooled
    private static let unpooled = Int.max

    /// Free-list heads per size class; a free block's payload holds the next free block.
    private let heads: UnsafeMutablePointer<UnsafeMutableRawPointer?>

    init() {
        heads = .allocate(capacity: Self.classes)
        heads.initialize(repeating: nil, count: Self.classes)
    }

    deinit {
        for c in 0..<Self.classes {
            var block = heads[c]
            while let raw = block {
                block = (raw + Self.header).load(as: UnsafeMutableRawPointer?.self)
                Glibc.free(raw)
            }
        }
        heads.deallocate()
    }

    /// The `nghttp2_mem` for `nghttp2_session_client_new3` (nghttp2 copies it); valid while the pool lives.
    /// Its user data is the free-list table itself, so the callbacks touch no Swift object (no retain/release).
    var mem: nghttp2_mem {
        nghttp2_mem(
            mem_user_data: UnsafeMutableRawPointer(heads),
            malloc: { size, user in NGHTTP2MemoryPool.allocate(size, freeLists(user)) },
            free: { ptr, user in NGHTTP2MemoryPool.release(ptr, freeLists(user)) },
            calloc: { count, size, user in
                let (total, overflow) = count.multipliedReportingOverflow(by: size)
                guard !overflow, let ptr = NGHTTP2MemoryPool.allocate(total, freeLists(user)) else { return nil }
                memset(ptr, 0, total)
                return ptr
            },
            realloc: { ptr, size, user in NGHTTP2MemoryPool.reallocate(ptr, size, freeLists(user)) })
    }

    @inline(__always) private static func sizeClass(_ size: Int) -> Int { Swift.max((size + 15) >> 4, 1) }

    static func allocate(_ size: Int, _ heads: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> UnsafeMutableRawPointer? {
        let c = sizeClass(size)
        if c < classes, let heads {
            if let raw = heads[c] {
                heads[c] = (raw + header).load(as: UnsafeMutableRawPointer?.self)
                return raw + header
            }
            guard let raw = Glibc.malloc(header + c << 4) else { return nil }
            raw.storeBytes(of: c, as: Int.self)
            return raw + header
        }
        guard size <= Int.max - header, let raw = Glibc.malloc(header + size) else { return nil }
        raw.storeBytes(of: unpooled, as: Int.self)
        return raw + header
    }

    static func release(_ ptr: UnsafeMutableRawPointer?, _ heads: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        guard let ptr else { return }
        let raw = ptr - header
        let c = raw.load(as: Int.self)
        if c < classes, let heads {
            ptr.storeBytes(of: heads[c], as: UnsafeMutableRawPointer?.self)
            heads[c] = raw
        } else {
            Glibc.free(raw)
        }
    }

    static func reallocate(_ ptr: UnsafeMutableRawPointer?, _ size: Int, _ heads: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> UnsafeMutableRawPointer? {
        guard let ptr else { return allocate(size, heads) }
        let raw = ptr - header
        let c = raw.load(as: Int.self)
        if c >= classes {
            guard size <= Int.max - header, let moved = Glibc.realloc(raw, header + size) else { return nil }
            return moved + header
        }
        let capacity = c << 4
        if size <= capacity { return ptr }
        guard let fresh = allocate(size, heads) else { return nil }
        fresh.copyMemory(from: ptr, byteCount: capacity)
        release(ptr, heads)
        return fresh
    }
}

@inline(__always)
private func freeLists(_ user: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<UnsafeMutableRawPointer?>? {
    user?.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
}
