import Foundation

/// Memory that retention by bytes (`--retain-bytes`) frees goes back to the system. glibc keeps freed
/// results in its heap, resident (and raises its mmap threshold to the size of large blocks freed, so
/// later results come from the heap too). Once the core's retained bytes have dropped by 16 MiB since
/// the highest point after the last trim (an eviction walk), the loop calls `malloc_trim`. Once finished
/// ops hold an eighth of the budget it also fixes the mmap threshold at 256 KiB, so that from then on
/// large results are mapped and unmapped. Not before: mapping every large buffer (journal batches, big
/// SUBMITs) costs the loop 5–10 % CPU (docs/BENCHMARKS.md), a price paid only by a coordinator that
/// holds that much.
struct RetainedMemory {
    private var highSinceTrim = 0
    private var thresholdFixed = false

    /// Called once per loop pass with what the core retains and its budget: trims after an eviction walk.
    mutating func check(retained: Int, budget: Int) {
        if !thresholdFixed && retained > budget / 8 {
            thresholdFixed = true
            _ = GlibcHeap.option?(GlibcHeap.mmapThreshold, 256 << 10)
        }
        if retained > highSinceTrim { highSinceTrim = retained; return }
        guard highSinceTrim - retained >= 16 << 20 else { return }
        highSinceTrim = retained
        _ = GlibcHeap.trim?(0)
    }
}
