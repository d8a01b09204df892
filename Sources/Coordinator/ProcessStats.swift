import Foundation
import Glibc

/// This process's resource use, for STATUS-REPLY (`coordinator_rss_bytes`, `coordinator_cpu_us`).
enum ProcessStats {
    /// Resident set size in bytes: /proc/self/statm's second field (pages) × the page size; 0 if unknown.
    static func residentBytes() -> UInt64 {
        // "size resident shared text lib data dt", in pages.
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = statm.split(separator: " ")
        let page = sysconf(Int32(_SC_PAGESIZE))
        guard fields.count >= 2, let pages = UInt64(fields[1]), page > 0 else { return 0 }
        return pages * UInt64(page)
    }

    /// User + system CPU time used so far, in µs (getrusage(RUSAGE_SELF)); 0 if unknown.
    static func cpuMicros() -> UInt64 {
        var u = rusage()
        guard getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &u) == 0 else { return 0 }
        let us = (Int64(u.ru_utime.tv_sec) + Int64(u.ru_stime.tv_sec)) * 1_000_000
            + Int64(u.ru_utime.tv_usec) + Int64(u.ru_stime.tv_usec)
        return UInt64(max(0, us))
    }
}
