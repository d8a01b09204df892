#if canImport(Glibc)
import Glibc
#endif

/// glibc's heap controls, which malloc.h has and the Swift Glibc module does not: found at run time,
/// nil elsewhere. Used where the coordinator hands freed memory back (slow readers that left, results
/// evicted by `--retain-bytes`).
enum GlibcHeap {
    /// `malloc_trim(pad)`: returns free heap pages to the system.
    static let trim: (@convention(c) (Int) -> Int32)? = symbol("malloc_trim")
    /// `mallopt(param, value)`.
    static let option: (@convention(c) (Int32, Int32) -> Int32)? = symbol("mallopt")
    /// `M_MMAP_THRESHOLD`: blocks at least this large are mapped, not taken from the heap.
    static let mmapThreshold: Int32 = -3

    private static func symbol<F>(_ name: String) -> F? {
        #if canImport(Glibc)
        guard let s = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(s, to: F.self)
        #else
        return nil
        #endif
    }
}
