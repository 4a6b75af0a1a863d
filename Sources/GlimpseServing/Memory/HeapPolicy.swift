import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Gives the heap memory of a replaced or unloaded model back to the system once the model is gone.
///
/// A model's weights, packed weights and execution plans are freed once its last request has
/// finished, but glibc's allocator keeps freed memory in its arenas. Measured on 2 cores with the
/// shared models loaded, forty idle `models.reload` of squeezenet1.1: 459 → 817 MB without a trim,
/// 459 → 542 MB with one `malloc_trim` after each replaced model is released. While a client keeps
/// classifying, freed model memory sits between request buffers and the trim recovers little (459 →
/// 1,610 MB); a fixed mmap threshold with one arena bounded that (410 → 448 MB) but cost 24–38% of the
/// request rate, so it is not applied (BENCHMARKS.md, "Memory under model churn"). What is applied
/// (`fixMmapThreshold`, by `glimpse serve`) is a fixed mmap threshold of 1 MiB: glibc otherwise raises
/// its threshold to the size of each large block freed (up to 32 MiB), after which a model's weights
/// and plans come from the arenas and stay there when the model goes. With it, 20 reloads and 10
/// unload/load pairs under load leave RSS at 1.03× the steady state (1.26× without), at the same
/// request rate.
public enum HeapPolicy {
    /// Blocks of at least `bytes` are mapped and unmapped on their own (`M_MMAP_THRESHOLD`), so a
    /// released model's tensors go back to the system at once. Left alone when the environment sets
    /// `MALLOC_MMAP_THRESHOLD_` (glibc's own variable). Returns whether it was applied.
    @discardableResult
    public static func fixMmapThreshold(bytes: Int32 = 1 << 20) -> Bool {
        guard ProcessInfo.processInfo.environment["MALLOC_MMAP_THRESHOLD_"] == nil, let mallopt = C.mallopt else { return false }
        return mallopt(C.mmapThreshold, bytes) == 1
    }

    /// Polls (every 50 ms, for at most `timeoutSeconds`) until `object` has been deallocated, then
    /// returns the heap's free pages to the system.
    /// `done` gets the seconds it took, or nil when the object was still alive at the timeout.
    static func trimWhenReleased(_ object: AnyObject, timeoutSeconds: Double = 120,
                                 done: @escaping @Sendable (Double?) -> Void = { _ in }) {
        let start = DispatchTime.now()
        let deadline = start + timeoutSeconds
        let box = WeakBox(object)
        @Sendable func poll() {
            if box.object == nil {
                _ = C.mallocTrim?(0)
                done(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
            } else if DispatchTime.now() < deadline {
                DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + 0.05) { poll() }
            } else {
                done(nil)
            }
        }
        poll()
    }

    private final class WeakBox: @unchecked Sendable {
        weak var object: AnyObject?
        init(_ object: AnyObject) { self.object = object }
    }

    /// `<malloc.h>` is not part of the Glibc module; `malloc_trim` is looked up once by name
    /// (nil where the C library has none).
    private enum C {
        static let mallocTrim: (@convention(c) (Int) -> Int32)? = symbol("malloc_trim")
        static let mallopt: (@convention(c) (Int32, Int32) -> Int32)? = symbol("mallopt")
        /// `M_MMAP_THRESHOLD` of `<malloc.h>`.
        static let mmapThreshold: Int32 = -3

        static func symbol<T>(_ name: String) -> T? {
            #if canImport(Glibc)
            guard let pointer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
            return unsafeBitCast(pointer, to: T.self)
            #else
            return nil
            #endif
        }
    }
}
