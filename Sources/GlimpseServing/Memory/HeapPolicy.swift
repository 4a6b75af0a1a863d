import Foundation
import Synchronization
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

    /// Returns the heap's free pages to the system every `seconds`, for the life of the process.
    ///
    /// glibc gives each thread that allocates an arena (up to 8 per core); freed memory inside an
    /// arena stays resident until a trim. A 30-minute soak with a reload every 30 s showed it: each
    /// reload's new batch threads took fresh arenas that grew by 8–13 MiB within seconds, and the
    /// main heap by 11 MiB in another period, so RSS sat 23 MiB over its level for one reload period
    /// in seven of fifty, until the next reload's trim (`trimWhenReleased`). A trim walks every
    /// arena's free chunks under its lock, a few milliseconds for ~100 MB, so every 10 s costs
    /// nothing measurable. Returns false when the C library has no `malloc_trim` or `seconds` ≤ 0.
    /// A later call replaces the earlier schedule (0 stops it).
    @discardableResult
    public static func trimPeriodically(every seconds: Double) -> Bool {
        periodicTrim.withLock { timer in
            timer?.cancel()
            timer = nil
            guard seconds > 0, let trim = C.mallocTrim else { return false }
            let next = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .utility))
            next.schedule(deadline: .now() + seconds, repeating: seconds, leeway: .milliseconds(100))
            next.setEventHandler { _ = trim(0) }
            next.resume()
            timer = next
            return true
        }
    }

    /// The timer of `trimPeriodically`.
    private static let periodicTrim = Mutex<DispatchSourceTimer?>(nil)

    /// Polls (every 50 ms, for at most `timeoutSeconds`) until `object` has been deallocated, then
    /// returns the heap's free pages to the system.
    static func trimWhenReleased(_ object: AnyObject, timeoutSeconds: Double = 120) {
        let deadline = DispatchTime.now() + timeoutSeconds
        let box = WeakBox(object)
        @Sendable func poll() {
            if box.object == nil {
                _ = C.mallocTrim?(0)
            } else if DispatchTime.now() < deadline {
                DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + 0.05) { poll() }
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
